package envelope

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/k6options"
)

// ReadRun loads one k6 result through the k6 loader while hashing the
// bytes it reads, so the provenance names exactly the file that was used.
// name is how the source is recorded: keep it relative (see SourceName).
func ReadRun(name string, r io.Reader, opts k6.LoadOptions) (Input, error) {
	h := sha256.New()
	run, err := k6.LoadReader(name, io.TeeReader(r, h), opts)
	if err != nil {
		return Input{}, err
	}
	// The loader may stop before EOF (a summary is one JSON value); hash the rest.
	if _, err := io.Copy(h, r); err != nil {
		return Input{}, fmt.Errorf("%s: %w", name, err)
	}
	return Input{Run: run, Source: Source{File: name, SHA256: hex.EncodeToString(h.Sum(nil)), Format: string(run.Format)}}, nil
}

// ReadFiles loads run files from disk; sources are named by SourceName.
func ReadFiles(paths []string, opts k6.LoadOptions) ([]Input, error) {
	var in []Input
	for _, p := range paths {
		if p == "-" {
			i, err := ReadRun("-", os.Stdin, opts)
			if err != nil {
				return nil, err
			}
			in = append(in, i)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		i, err := ReadRun(SourceName(p), f, opts)
		_ = f.Close() // only read
		if err != nil {
			return nil, err
		}
		in = append(in, i)
	}
	return in, nil
}

// ReadFS loads run files from a file system (the embedded demo runs);
// prefix is prepended to each name in the provenance.
func ReadFS(fsys fs.FS, names []string, prefix string, opts k6.LoadOptions) ([]Input, error) {
	var in []Input
	for _, n := range names {
		f, err := fsys.Open(n)
		if err != nil {
			return nil, err
		}
		i, err := ReadRun(filepath.ToSlash(filepath.Join(prefix, n)), f, opts)
		_ = f.Close() // only read
		if err != nil {
			return nil, err
		}
		in = append(in, i)
	}
	return in, nil
}

// SourceName is how a file is named in the provenance: relative paths as
// given (slash-separated), absolute ones relative to the working folder
// when inside it, else the base name, so no machine path is recorded.
func SourceName(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(p)
}

// ReadK6Options reads the workload from a `k6 inspect script.js` file:
// scenario names, their executors (joined when several), the VUs (the sum
// of each scenario's vus, or maxVUs for arrival-rate executors, or the
// stage peak), and the duration of one scenario (or of the stages).
func ReadK6Options(path string) (*Workload, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseK6Options(path, b)
}

// ParseK6Options is ReadK6Options on bytes; path names them in errors.
// k6options reads the file, so the exporter's reports and the envelope
// read every field, and every duration, by one rule.
func ParseK6Options(path string, b []byte) (*Workload, error) {
	o, err := k6options.Parse(path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	w := &Workload{}
	var longest time.Duration
	execs := map[string]bool{}
	for _, sc := range o.Scenarios {
		execs[sc.Executor] = true
		w.Scenarios = append(w.Scenarios, sc.Name)
		vus := sc.VUs
		if vus == 0 {
			vus = sc.MaxVUs
		}
		if vus == 0 {
			vus = sc.PreAllocatedVUs
		}
		// One run's length: the scenario's duration or its stages, not
		// counting its start offset.
		longest = max(longest, sc.Duration)
		var staged time.Duration
		if sc.Executor == "ramping-vus" {
			vus = max(vus, sc.StartVUs)
		}
		for _, st := range sc.Stages {
			staged += st.Duration
			if sc.Executor == "ramping-vus" {
				vus = max(vus, int(st.Target))
			}
		}
		longest = max(longest, staged)
		w.VUs += vus
	}
	slices.Sort(w.Scenarios)
	w.Executor = strings.Join(sortedKeys(execs), ",")
	if longest > 0 {
		w.Duration = longest.String()
	}
	return w, nil
}
