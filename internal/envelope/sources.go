package envelope

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/k6options"
)

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
