package envelope

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An envelope file cut short anywhere, YAML or JSON, is refused as
// truncated with the line it ends at, not with a type error about its
// last line or a list of missing fields; one cut inside its optional
// last line may read as a whole file (a value cut to a shorter valid
// one, such as "confidence: 0.9" for 0.95, cannot be told apart).
func TestParseTruncated(t *testing.T) {
	y, err := os.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := Parse("envelope.yaml", y)
	if err != nil {
		t.Fatal(err)
	}
	j, err := Marshal(env, JSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"envelope.yaml", y}, {"envelope.json", j}} {
		tail := bytes.LastIndexByte(bytes.TrimRight(f.b, "\n}"), '\n')
		var cuts []int
		for i := 1; i < 80; i++ {
			cuts = append(cuts, len(f.b)*i/80)
		}
		for n := len(f.b) - 200; n < len(f.b)-1; n++ {
			cuts = append(cuts, n) // every byte of the last section
		}
		for _, n := range cuts {
			if f.b[n-1] == '\n' && n > bytes.Index(f.b, []byte("\ntolerance:")) {
				continue // a whole line less of the last section reads as missing fields
			}
			_, err := Parse(f.name, f.b[:n])
			if err == nil && n < tail {
				t.Errorf("%s cut at byte %d: accepted", f.name, n)
				continue
			}
			if err != nil && (!strings.Contains(err.Error(), "it looks truncated") || !strings.Contains(err.Error(), "ends at line")) {
				t.Errorf("%s cut at byte %d: %v", f.name, n, err)
			}
		}
	}
}

// The provenance's date is named for what it is, when the runs ended; a
// file with its former name, generated_at, reads the same.
func TestRunsEndedAtFormerName(t *testing.T) {
	y, err := os.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"runs_ended_at", "generated_at"} {
		b := bytes.Replace(y, []byte("provenance:\n"), []byte("provenance:\n  "+key+": 2026-11-30T09:15:47Z\n"), 1)
		env, err := Parse("envelope.yaml", b)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got := env.Provenance.RunsEndedAt.Format("15:04:05"); got != "09:15:47" {
			t.Errorf("%s: runs ended at %s", key, got)
		}
		out, err := Marshal(env, YAML)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out, []byte("runs_ended_at: ")) || bytes.Contains(out, []byte("generated_at")) {
			t.Errorf("%s: written as\n%s", key, out[:min(len(out), 300)])
		}
	}
}
