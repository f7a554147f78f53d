-- Runs, one row each, and every figure the envelope computes for a run.
-- {{id}}, {{time}} and {{bool}} are the back end's own types.
CREATE TABLE runs (
  id {{id}},
  test TEXT NOT NULL,
  testid TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  commit_id TEXT NOT NULL DEFAULT '',
  commit_time {{time}},
  branch TEXT NOT NULL DEFAULT '',
  version TEXT NOT NULL DEFAULT '',
  run_time {{time}},
  duration_s DOUBLE PRECISION,
  vus INTEGER,
  source_file TEXT NOT NULL DEFAULT '',
  format TEXT NOT NULL DEFAULT '',
  note TEXT NOT NULL DEFAULT '',
  excluded {{bool}} NOT NULL DEFAULT FALSE,
  exclude_reason TEXT NOT NULL DEFAULT '',
  recorded_at {{time}} NOT NULL,
  UNIQUE (testid, content_hash)
);

CREATE INDEX runs_test_branch ON runs (test, branch);

CREATE TABLE figures (
  run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  endpoint TEXT NOT NULL,
  figure TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  count BIGINT,
  ci_low DOUBLE PRECISION,
  ci_high DOUBLE PRECISION,
  PRIMARY KEY (run_id, endpoint, figure)
);
