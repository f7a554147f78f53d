package envelope

import (
	"embed"
	"io/fs"
)

// samples are the real k6 runs of the top-level testdata that `envelope
// demo` embeds: the history fixture's 30 summary exports, and two
// baseline-mix summary exports with their script's `k6 inspect`. Only a
// package at the module root can embed them where they are (an embed
// pattern cannot climb out of its package's folder), and there the tests
// read them too, through internal/fixtures: each file is kept once.
//
//go:embed testdata/k6/history-v2.2.0/run-*.summary.json
//go:embed testdata/k6/baseline-mix-v2.2.0/baseline-a.summary.json testdata/k6/baseline-mix-v2.2.0/baseline-b.summary.json
//go:embed testdata/k6/baseline-mix-v2.2.0/script.k6-inspect.json
var samples embed.FS

// Samples holds the embedded testdata files, named from the module root
// (e.g. testdata/k6/history-v2.2.0/run-01.summary.json).
func Samples() fs.FS { return samples }
