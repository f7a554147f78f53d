-- A figure's series across runs is read by figure and endpoint first.
CREATE INDEX figures_series ON figures (figure, endpoint, run_id);
