// Package k6 loads every result format k6 writes into one normalized run
// model: the three summary JSON shapes, NDJSON (--out json) and CSV
// (--out csv). Numbers equal k6's own: trend statistics from point streams
// use k6's percentile formula over all samples.
//
// Files by format and stage:
//
//   - load.go: Load and its options; sniff.go tells the format from the
//     first bytes (gzip is unpacked by points.go's Input).
//   - summary.go: the three summary shapes decoded into one document;
//     summary_export.go (--summary-export), summary_handle.go
//     (handleSummary() data), summary_machine.go (the machine-readable
//     summary) read each shape.
//   - points.go: the point reader the exporter, the stack's replay and the
//     backtest share (open, gzip, lines, line numbers, a bad-line policy).
//   - ndjson.go, ndjson_scan.go, timestamp.go: --out json lines, the
//     JSON-strict scanner and RFC 3339 times; csv.go: --out csv rows.
//   - stream.go: the parallel chunk pipeline that summarizes point streams;
//     window.go: the run start and the warm-up and time windows;
//     registry.go: series and sub-metric interning; sketch.go: the
//     bounded-memory mode.
//   - finish.go: trend, counter, rate and gauge statistics per metric,
//     sub-metric and group; trend_stats.go: the stat names;
//     thresholds.go: k6 threshold expressions.
//   - render.go: text and JSON output; progress.go: the progress bar.
package k6
