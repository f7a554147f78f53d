package k6

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	vusPoint  = `{"metric":"vus","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":3,"tags":{}}}`
	vusMetric = `{"type":"Metric","data":{"name":"vus","type":"gauge","contains":"default"},"metric":"vus"}`
)

func TestPointReaderPolicies(t *testing.T) {
	long := `{"metric":"vus","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":3,"tags":{"x":"` + strings.Repeat("a", 300) + `"}}}`
	input := strings.Join([]string{vusMetric, vusPoint, "", `{"metric":"vus","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":"x"}}`, long, vusPoint}, "\n") + "\n"
	tests := []struct {
		name       string
		bad        func(skipped *int, seen *[]string) BadLinePolicy
		maxLine    int
		wantPoints int
		wantErr    string
		wantBad    []string
	}{
		{name: "fail", bad: func(*int, *[]string) BadLinePolicy { return FailOnBadLine },
			wantPoints: 1, wantErr: `in.ndjson:4: field "data.value"`},
		{name: "nil fails", bad: func(*int, *[]string) BadLinePolicy { return nil },
			wantPoints: 1, wantErr: `in.ndjson:4: field "data.value"`},
		{name: "skip", bad: func(n *int, _ *[]string) BadLinePolicy { return skipBadLines(n) },
			wantPoints: 3},
		{name: "skip too long", maxLine: 200, bad: func(n *int, _ *[]string) BadLinePolicy { return skipBadLines(n) },
			wantPoints: 2},
		{name: "callback", maxLine: 200, bad: func(_ *int, seen *[]string) BadLinePolicy {
			return func(e *LineError) error {
				*seen = append(*seen, e.Error())
				if errors.Is(e, ErrLineTooLong) {
					return e
				}
				return nil
			}
		}, wantPoints: 1, wantErr: "in.ndjson:5: line too long: longer than 200 bytes",
			wantBad: []string{`in.ndjson:4: field "data.value"`, "in.ndjson:5: line too long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				data := []byte(input)
				if gz {
					var b bytes.Buffer
					w := gzip.NewWriter(&b)
					if _, err := w.Write(data); err != nil {
						t.Fatal(err)
					}
					if err := w.Close(); err != nil {
						t.Fatal(err)
					}
					data = b.Bytes()
				}
				in, err := NewInput("in.ndjson", bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				var skipped, points, metrics int
				var seen []string
				r := &PointReader{Name: "in.ndjson", MaxLine: tt.maxLine, OnBad: tt.bad(&skipped, &seen),
					OnPoint:  func(p *Point) error { points++; return nil },
					OnMetric: func(d *MetricDef) error { metrics++; return nil }}
				err = r.Read(in)
				if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)) {
					t.Fatalf("gzip %v: err %v, want %q", gz, err, tt.wantErr)
				}
				if points != tt.wantPoints || metrics != 1 {
					t.Errorf("gzip %v: %d points, %d metrics; want %d, 1", gz, points, metrics, tt.wantPoints)
				}
				if tt.name == "skip" && skipped != 1 || tt.name == "skip too long" && skipped != 2 {
					t.Errorf("gzip %v: skipped %d", gz, skipped)
				}
				if len(seen) != len(tt.wantBad) {
					t.Fatalf("gzip %v: bad lines %q, want %q", gz, seen, tt.wantBad)
				}
				for i := range seen {
					if !strings.HasPrefix(seen[i], tt.wantBad[i]) {
						t.Errorf("gzip %v: bad line %q, want %q", gz, seen[i], tt.wantBad[i])
					}
				}
			}
		})
	}
}

func TestPointReaderCallbackErrorAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.ndjson")
	if err := os.WriteFile(path, []byte(vusMetric+"\n"+vusPoint), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop here")
	err := ReadPointsFile(path, &PointReader{OnPoint: func(*Point) error { return stop }})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || le.File != path || !errors.Is(err, stop) {
		t.Fatalf("err %v, want %s:2: stop here", err, path)
	}
	if err := ReadPointsFile(filepath.Join(t.TempDir(), "missing"), &PointReader{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := NewInput("bad.gz", bytes.NewReader([]byte{0x1f, 0x8b, 0})); err == nil || !strings.Contains(err.Error(), "bad.gz: broken gzip stream") {
		t.Errorf("broken gzip: %v", err)
	}
}

func TestPointReaderLinesBeyondBuffer(t *testing.T) {
	big := `{"metric":"vus","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":3,"tags":{"x":"` + strings.Repeat("a", 100<<10) + `"}}}`
	input := vusMetric + "\n" + big + "\n" + vusPoint + "\n"
	for _, tt := range []struct {
		maxLine, points, skipped int
	}{{0, 2, 0}, {64 << 10, 1, 1}} {
		in, err := NewInput("big.ndjson", strings.NewReader(input))
		if err != nil {
			t.Fatal(err)
		}
		var skipped, points int
		var tag string
		r := &PointReader{Name: "big.ndjson", MaxLine: tt.maxLine, OnBad: skipBadLines(&skipped),
			OnPoint: func(p *Point) error { points++; tag = p.Tags["x"]; return nil }}
		if err := r.Read(in); err != nil {
			t.Fatal(err)
		}
		if points != tt.points || skipped != tt.skipped || r.Line() != 3 {
			t.Errorf("max %d: %d points, %d skipped, %d lines; want %d, %d, 3", tt.maxLine, points, skipped, r.Line(), tt.points, tt.skipped)
		}
		if tt.maxLine == 0 && tag != "" {
			t.Errorf("last point kept the long line's tags")
		}
	}
}

// skipBadLines skips bad lines and counts them in n.
func skipBadLines(n *int) BadLinePolicy {
	return func(*LineError) error {
		*n++
		return nil
	}
}
