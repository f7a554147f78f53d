package exporter

// Helpers the tests of this package share: replaying a reader, the
// prometheus.Collector path over the store, the runs held.

import (
	"io"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/envelope-dev/envelope/internal/k6"
)

// replayReader ingests NDJSON from r, as ReplayFile does, without its
// check that samples came.
func (s *Server) replayReader(name string, r io.Reader) (int, error) {
	in, err := k6.NewInput(name, r)
	if err != nil {
		return 0, err
	}
	defer in.Close() //nolint:errcheck // only read
	return s.ingestLines(in, SourceResults, false)
}

// runCount is the number of runs held.
func (st *store) runCount() int {
	st.runMu.Lock()
	defer st.runMu.Unlock()
	return len(st.runs)
}

// collect emits every series as prometheus.Metrics: the Collector path,
// which a pedantic registry checks against the scrape path.
func (st *store) collect(ch chan<- prometheus.Metric) {
	for _, f := range st.sortedFamilies() {
		for _, s := range f.snapshot() {
			if f.typ == k6.Rate {
				ch <- &k6Metric{f: f, s: s, cond: 1}
				ch <- &k6Metric{f: f, s: s, cond: 0}
				continue
			}
			ch <- &k6Metric{f: f, s: s}
		}
	}
}

// k6Metric renders one series at scrape time.
type k6Metric struct {
	f    *family
	s    *series
	cond int
}

func (m *k6Metric) Desc() *prometheus.Desc { return m.f.desc }

func (m *k6Metric) Write(out *dto.Metric) error {
	m.f.write(m.s, m.cond, out)
	return nil
}
