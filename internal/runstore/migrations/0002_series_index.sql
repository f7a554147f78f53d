-- A figure's series across runs is read by figure and endpoint; the index
-- holds the values too, so reading a series touches no figure row.
CREATE INDEX figures_series ON figures (figure, endpoint, run_id, value, count, ci_low, ci_high);
