package exporter

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// CheckReplayable tells a point stream (k6 --out json NDJSON, plain or
// gzip, or --out csv) from the formats serve cannot replay, by their
// first line, before anything is ingested.
func CheckReplayable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // read only: closing loses nothing
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: broken gzip stream: %w", path, err)
		}
		defer gz.Close() //nolint:errcheck // only the head is read; a checksum error past it is not this check's concern
		r = gz
	}
	head := make([]byte, 1<<16)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return fmt.Errorf("%s: %w", path, err)
	}
	head = head[:n]
	first, _, _ := bytes.Cut(head, []byte("\n"))
	first = bytes.TrimSpace(first)
	switch {
	case len(bytes.TrimSpace(head)) == 0:
		return fmt.Errorf("%s: empty: want k6 --out json (NDJSON, plain or .gz) or --out csv output", path)
	case bytes.HasPrefix(first, []byte("metric_name,")):
		return nil // --out csv
	}
	var line struct {
		Type   string `json:"type"`
		Metric string `json:"metric"`
	}
	if json.Unmarshal(first, &line) == nil && (line.Type == "Metric" || line.Type == "Point") {
		return nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(head), []byte("{")) && bytes.Contains(head, []byte(`"metrics"`)) {
		return fmt.Errorf("%s: a k6 summary file (--summary-export, handleSummary or the machine-readable summary): it holds end-of-test figures, no samples to replay; give k6 --out json (NDJSON, plain or .gz) or --out csv output", path)
	}
	show := first
	if len(show) > 60 {
		show = append(show[:60:60], "…"...)
	}
	return fmt.Errorf("%s:1: not k6 --out json NDJSON (a Metric or Point line) or --out csv output: %q", path, show)
}
