package envelope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
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

// inspectOptions is the part of `k6 inspect` output the envelope reads.
type inspectOptions struct {
	VUs       *int    `json:"vus"`
	Duration  *string `json:"duration"`
	Stages    []stage `json:"stages"`
	Scenarios map[string]struct {
		Executor        string  `json:"executor"`
		VUs             *int    `json:"vus"`
		MaxVUs          *int    `json:"maxVUs"`
		PreAllocatedVUs *int    `json:"preAllocatedVUs"`
		StartVUs        *int    `json:"startVUs"`
		Duration        *string `json:"duration"`
		Stages          []stage `json:"stages"`
	} `json:"scenarios"`
}

type stage struct {
	Duration string `json:"duration"`
	Target   int    `json:"target"`
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
func ParseK6Options(path string, b []byte) (*Workload, error) {
	var o inspectOptions
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, jsonErr(path, b, err)
	}
	w := &Workload{}
	stagesLen := func(st []stage) (time.Duration, int, error) {
		var d time.Duration
		peak := 0
		for i, s := range st {
			sd, err := time.ParseDuration(s.Duration)
			if err != nil {
				return 0, 0, fmt.Errorf("%s: field stages[%d].duration: %q is not a duration", path, i, s.Duration)
			}
			d += sd
			peak = max(peak, s.Target)
		}
		return d, peak, nil
	}
	var longest time.Duration
	execs := map[string]bool{}
	names := make([]string, 0, len(o.Scenarios))
	for name := range o.Scenarios {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sc := o.Scenarios[name]
		if sc.Executor == "" {
			return nil, fmt.Errorf("%s: field scenarios.%s.executor: missing", path, name)
		}
		execs[sc.Executor] = true
		w.Scenarios = append(w.Scenarios, name)
		vus := 0
		switch {
		case sc.VUs != nil:
			vus = *sc.VUs
		case sc.MaxVUs != nil:
			vus = *sc.MaxVUs
		case sc.PreAllocatedVUs != nil:
			vus = *sc.PreAllocatedVUs
		}
		if sc.Duration != nil {
			d, err := time.ParseDuration(*sc.Duration)
			if err != nil {
				return nil, fmt.Errorf("%s: field scenarios.%s.duration: %q is not a duration", path, name, *sc.Duration)
			}
			longest = max(longest, d)
		}
		if len(sc.Stages) > 0 {
			d, peak, err := stagesLen(sc.Stages)
			if err != nil {
				return nil, err
			}
			longest = max(longest, d)
			if sc.Executor == "ramping-vus" {
				vus = max(vus, peak)
			}
		}
		w.VUs += vus
	}
	if len(o.Scenarios) == 0 {
		// Shortcut options (vus/duration/stages) make one default scenario.
		if o.VUs != nil {
			w.VUs = *o.VUs
		}
		if o.Duration != nil {
			d, err := time.ParseDuration(*o.Duration)
			if err != nil {
				return nil, fmt.Errorf("%s: field duration: %q is not a duration", path, *o.Duration)
			}
			longest = d
			w.Executor = "constant-vus"
		}
		if len(o.Stages) > 0 {
			d, peak, err := stagesLen(o.Stages)
			if err != nil {
				return nil, err
			}
			longest, w.VUs, w.Executor = d, max(w.VUs, peak), "ramping-vus"
		}
		if w.Executor != "" {
			w.Scenarios = []string{"default"}
		}
	}
	if len(execs) > 0 {
		w.Executor = strings.Join(sortedKeys(execs), ",")
	}
	if longest > 0 {
		w.Duration = longest.String()
	}
	return w, nil
}
