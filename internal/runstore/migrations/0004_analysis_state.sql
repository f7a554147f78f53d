-- The change-point analysis of a line, as a checkpoint: what appending
-- runs needs to answer as the from-scratch analysis would (each series'
-- latest runs whole, of the earlier runs only the weak change points and
-- outliers). It stands for the first run_count runs of the line in
-- commit-time order, whose ids hash to line_hash; a line that changed
-- before its end (a run recorded out of order, excluded or included)
-- no longer hashes so, and is analysed from scratch again.
CREATE TABLE analysis_state (
  test TEXT NOT NULL,
  line TEXT NOT NULL,
  run_count INTEGER NOT NULL,
  line_hash TEXT NOT NULL,
  state {{blob}} NOT NULL,
  updated_at {{time}} NOT NULL,
  PRIMARY KEY (test, line)
);
