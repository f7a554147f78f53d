package exporter

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// --k6.results must replay point streams whatever their name, and refuse
// what holds no samples instead of serving nothing without a word.
func TestReplayFileInputs(t *testing.T) {
	dir := t.TempDir()
	nd, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(nd) // in memory, cannot fail
	_ = zw.Close()      // in memory, cannot fail
	// A CSV named without .csv (content decides, as the loaders do).
	csv := "metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata\n" +
		"http_reqs,1796028664,1.000000,,,,true,::home page,GET,home,HTTP/1.0,arrival,,200,,,home,,\n" +
		"http_reqs,1796028665,1.000000,,,,true,::home page,GET,home,HTTP/1.0,arrival,,200,,,home,,\n"
	var csvGz bytes.Buffer
	zw = gzip.NewWriter(&csvGz)
	_, _ = zw.Write([]byte(csv)) // in memory, cannot fail
	_ = zw.Close()               // in memory, cannot fail
	files := map[string][]byte{
		"run.ndjson.gz": gz.Bytes(),
		"run-csv.out":   []byte(csv),
		"run.csv.gz":    csvGz.Bytes(),
		"empty.ndjson":  nil,
		"summary.json":  []byte(`{"metrics":{"http_reqs":{"count":2,"rate":1}},"root_group":{}}` + "\n"),
		"notk6.json":    []byte(`{"hello":"world"}` + "\n"),
		"truncated.gz":  gz.Bytes()[:gz.Len()/2],
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file    string
		points  int    // > 0: want exactly this many samples
		wantErr string // else: want an error containing this
	}{
		{"run.ndjson.gz", 1966, ""},
		{"run-csv.out", 2, ""},
		{"run.csv.gz", 2, ""},
		{"empty.ndjson", 0, "no k6 samples"},
		{"summary.json", 0, "no k6 samples"},
		{"notk6.json", 0, "no k6 samples"},
		{"truncated.gz", 0, "truncated.gz"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := goldenServer(t, Config{})
			n, err := s.ReplayFile(filepath.Join(dir, tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.file) {
					t.Fatalf("got %d points, err %v; want an error naming the file and %q", n, err, tc.wantErr)
				}
				return
			}
			if err != nil || n != tc.points {
				t.Fatalf("got %d points, err %v; want %d", n, err, tc.points)
			}
		})
	}
}
