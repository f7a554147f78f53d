// Package otava reads the runs of an Otava-style CSV (one run a row: its
// commit time, commit and one column per figure) as records for the run
// history, and the commit times it and `history record --time` take.
package otava

import (
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// csvMeta are the columns of an Otava-style CSV that are run metadata;
// every other column is a figure, named as figures.ParseKey takes it
// (endpoint-prefixed for an endpoint's).
var csvMeta = map[string]bool{"time": true, "commit": true, "branch": true, "version": true, "testid": true, "note": true}

// csvTimeLayouts are the time forms an Otava-style CSV's time column
// may take (Otava writes "2006-01-02 15:04:05 -0700").
var csvTimeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"}

// ParseTime reads a commit time, as --time and a CSV time column give it: one of csvTimeLayouts (UTC when no
// zone) or Unix seconds.
func ParseTime(s string) (time.Time, error) {
	for _, l := range csvTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(secs) && !math.IsInf(secs, 0) {
		return time.Unix(0, int64(secs*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339, 2006-01-02 15:04:05 [-0700], or Unix seconds)", s)
}

// ReadCSV reads an Otava-style CSV: a header row naming a time column,
// a commit column, optional branch, version, testid and note columns, and
// one column per figure; then one run a row, the commit time from its
// time column. Empty figure cells are absent figures. Each row's
// identity is its testid and the hash of its cells, so importing the
// same file twice records each run once.
func ReadCSV(name string, r io.Reader, test string) ([]runstore.Record, error) {
	if test == "" {
		return nil, fmt.Errorf("%s: give the runs' test with --test", name)
	}
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: line 1: reading the header: %w", name, err)
	}
	cols := make([]figures.Key, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		header[i] = h
		if seen[h] {
			return nil, fmt.Errorf("%s: line 1, column %d: %q appears twice", name, i+1, h)
		}
		seen[h] = true
		if csvMeta[h] {
			continue
		}
		k, err := figures.ParseKey(h)
		if err != nil {
			return nil, fmt.Errorf("%s: line 1, column %d: %w", name, i+1, err)
		}
		cols[i] = k
	}
	for _, need := range []string{"time", "commit"} {
		if !seen[need] {
			return nil, fmt.Errorf("%s: line 1: no %s column (an Otava-style CSV has time, commit and one column per figure)", name, need)
		}
	}
	var out []runstore.Record
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rec, err := csvRecord(name, line, header, cols, row, test)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no runs after the header", name)
	}
	return out, nil
}

// csvRecord makes one row's record.
func csvRecord(name string, line int, header []string, cols []figures.Key, row []string, test string) (runstore.Record, error) {
	rec := runstore.Record{Run: runstore.Run{Test: test, SourceFile: fmt.Sprintf("%s:%d", name, line), Format: "otava-csv"}}
	h := sha256.New()
	for i, cell := range row {
		cell = strings.TrimSpace(cell)
		_, _ = fmt.Fprintf(h, "%s=%s\n", header[i], cell)
		field := func(err error) error {
			return fmt.Errorf("%s: line %d, field %s: %w", name, line, header[i], err)
		}
		switch header[i] {
		case "time":
			t, err := ParseTime(cell)
			if err != nil {
				return runstore.Record{}, field(err)
			}
			rec.CommitTime = t
		case "commit":
			rec.Commit = cell
		case "branch":
			rec.Branch = cell
		case "version":
			rec.Version = cell
		case "testid":
			rec.TestID = cell
		case "note":
			rec.Note = cell
		default:
			if cell == "" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return runstore.Record{}, field(fmt.Errorf("%q is not a finite number ≥ 0", cell))
			}
			rec.Figures = append(rec.Figures, figures.KeyValue{Key: cols[i], Value: figures.Value{X: v}})
		}
	}
	if rec.Commit == "" {
		return runstore.Record{}, fmt.Errorf("%s: line %d, field commit: empty", name, line)
	}
	rec.SHA256 = hex.EncodeToString(h.Sum(nil))
	return rec, nil
}
