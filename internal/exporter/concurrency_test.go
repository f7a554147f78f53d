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
)

// Scrapes run while points stream in (the live case): every scrape must
// succeed, and once ingestion ends the counters hold every point, none
// lost or counted twice. Run with -race to check the locking.
func TestScrapeWhileIngesting(t *testing.T) {
	b, err := os.ReadFile("testdata/runA-out.ndjson")
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
	var wg sync.WaitGroup
	for range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.ReplayReader("runA-out.ndjson", bytes.NewReader(b)); err != nil {
				t.Error(err)
			}
		}()
	}
	done := make(chan struct{})
	scrapes := make(chan int, 1)
	go func() {
		n := 0
		defer func() { scrapes <- n }()
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
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("scrape answered %d", resp.StatusCode)
				return
			}
			n++
		}
	}()
	wg.Wait()
	close(done)
	if n := <-scrapes; n == 0 {
		t.Error("no scrape completed while ingesting")
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
