package exporter

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// Scrapes run while points stream in (the live case): every scrape must
// succeed, and once ingestion ends the counters hold every point, none
// lost or counted twice. Run with -race to check the locking. One replay
// stops halfway until a scrape has completed, so at least one scrape
// overlaps ingestion however the scheduler runs the goroutines.
func TestScrapeWhileIngesting(t *testing.T) {
	b, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var want int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"metric":"http_reqs","type":"Point"`) {
			want++
		}
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	const copies = 8
	scraped := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r io.Reader = bytes.NewReader(b)
			if i == 0 {
				r = &gatedReader{r: r, at: len(b) / 2, gate: scraped}
			}
			if _, err := s.replayReader("runA-out.ndjson", r); err != nil {
				t.Error(err)
			}
		}()
	}
	done := make(chan struct{})
	scrapes := make(chan int, 1)
	go func() {
		n := 0
		defer func() { scrapes <- n }()
		defer once.Do(func() { close(scraped) }) // never leave the gated replay waiting
		for {
			select {
			case <-done:
				return
			default:
			}
			resp, err := http.Get(ts.URL + "/metrics")
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("scrape answered %d", resp.StatusCode)
				return
			}
			n++
			once.Do(func() { close(scraped) })
		}
	}()
	wg.Wait()
	close(done)
	if n := <-scrapes; n == 0 {
		t.Fatal("no scrape completed")
	}

	mfs, err := s.K6Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got float64
	for _, mf := range mfs {
		if mf.GetName() == "k6_http_reqs_total" {
			for _, m := range mf.GetMetric() {
				got += m.GetCounter().GetValue()
			}
		}
	}
	if got != float64(copies*want) {
		t.Errorf("k6_http_reqs_total sums to %v, want %d (%d copies of %d)", got, copies*want, copies, want)
	}
	if lint, err := testutil.GatherAndLint(s.K6Gatherer(), "k6_http_reqs_total"); err != nil || len(lint) > 0 {
		t.Errorf("lint: %v %v", err, lint)
	}
}

// gatedReader reads up to at bytes, then waits for gate to close.
type gatedReader struct {
	r    io.Reader
	at   int
	read int
	gate <-chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.read >= g.at {
		<-g.gate
		return g.r.Read(p)
	}
	if len(p) > g.at-g.read {
		p = p[:g.at-g.read]
	}
	n, err := g.r.Read(p)
	g.read += n
	return n, err
}
