package k6

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

func isSummary(f Format) bool {
	return f == FormatSummaryExport || f == FormatHandleSummary || f == FormatMachineReadable
}

// formatSummary stands for "one of the three summary shapes" until the
// document is decoded.
const formatSummary Format = "summary"

func readError(name string, err error) error {
	if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: broken gzip stream: %v", name, err)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// sniff tells the format from the first bytes: a CSV header, an NDJSON
// first line (a complete object with "type" Metric or Point), or else a
// JSON document (one of the summaries).
func sniff(name string, br *bufio.Reader) (Format, error) {
	head, err := br.Peek(64 << 10)
	if len(head) == 0 {
		if err != nil && err != io.EOF {
			return "", readError(name, err)
		}
		return "", fmt.Errorf("%s:1: empty file", name)
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\ufeff"))
	if len(trimmed) == 0 {
		return "", fmt.Errorf("%s:1: empty file (only white space)", name)
	}
	if bytes.HasPrefix(trimmed, []byte("metric_name,")) {
		return FormatCSV, nil
	}
	if trimmed[0] != '{' {
		return "", fmt.Errorf("%s:1: not k6 output: want a JSON object, NDJSON lines or a CSV header starting metric_name,", name)
	}
	if nl := bytes.IndexByte(trimmed, '\n'); nl >= 0 || len(head) < 64<<10 {
		first := trimmed
		if nl >= 0 {
			first = trimmed[:nl]
		}
		var r rawLine
		if scanNDJSON(trimEOL(first), &r) == nil {
			return FormatNDJSON, nil
		}
		if bytes.Contains(first, []byte(`"Point"`)) || bytes.Contains(first, []byte(`"Metric"`)) {
			// Looks like NDJSON with a broken first line: report it as such.
			return FormatNDJSON, nil
		}
	}
	return formatSummary, nil
}
