-- Change points as reported, one row each, keyed by the change's stable
-- id (test, figure, endpoint and the commit of its run), with their
-- lifecycle: new until someone acknowledges, expects, dismisses as a
-- false positive or marks as fixed. The run index and direction let a
-- change whose run moved by a run or two be matched again.
CREATE TABLE changes (
  id TEXT PRIMARY KEY,
  test TEXT NOT NULL,
  figure TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  commit_id TEXT NOT NULL DEFAULT '',
  testid TEXT NOT NULL DEFAULT '',
  run_index INTEGER NOT NULL,
  direction TEXT NOT NULL,
  before_value DOUBLE PRECISION NOT NULL,
  after_value DOUBLE PRECISION NOT NULL,
  status TEXT NOT NULL DEFAULT 'new',
  note TEXT NOT NULL DEFAULT '',
  first_reported {{time}} NOT NULL,
  updated_at {{time}} NOT NULL
);

CREATE INDEX changes_series ON changes (test, figure, endpoint);
