package exporter

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/envelope-dev/envelope/internal/otlp"
)

// scrapes serves the telemetry path so that its cost does not grow with
// the number of scrapers (an HA pair, an agent, people with curl):
//   - at most renderSlots renderings read the store at once: each holds
//     the encoded bytes of one family while it reads, and the gzipped
//     page, never a copy of the store;
//   - scrapers that ask while a rendering of the same format waits for
//     a slot join it and are sent the same bytes; one that asks once a
//     rendering has started reading the store gets another, so every
//     scrape sees every sample ingested before it asked;
//   - the body is rendered once, gzipped, and written to each; a scraper
//     that does not take gzip gets it decompressed as it is written, so a
//     slow reader holds a small reader, not an uncompressed copy.
//
// Nothing is kept once rendered, and at most one rendering a format
// waits for a slot. What a rendering holds (its page, and the encoded
// family it is reading) is charged to the memory account the OTLP
// receiver charges too, until its last scraper is served; a rendering
// that finds no room in it within scrapeMemoryWait is answered 503 with
// Retry-After.
type scrapes struct {
	g   prometheus.Gatherer
	log *slog.Logger
	sem chan struct{} // parallel scrapes; nil = no limit
	mem *otlp.Memory  // shared memory account; nil = none

	reading chan struct{} // renderSlots: renderings reading the store

	mu sync.Mutex
	// waiting holds, by format, the rendering that has not started
	// reading the store: scrapers arriving now join it.
	waiting map[expfmt.Format]*rendering
	joined  atomic.Int64 // scrapes served a rendering another started
	made    atomic.Int64 // renderings started
}

// renderSlots bounds the renderings reading the store at once. Two, so
// that a scraper arriving during a rendering has its own started at once
// rather than after it (each holds a family's encoded bytes and its page,
// both charged to the memory account).
const renderSlots = 2

// rendering is one rendering of the series in one format, shared by every
// scraper that asked for that format while it was made.
type rendering struct {
	done  chan struct{}
	gz    []byte // the encoded body, gzipped
	err   error  // the gather's error; gz holds what was gathered
	c     *charge
	users int // scrapers still to be served; s.mu guards it
}

// acceptedFormats are the exposition formats served (protobuf, with
// native histograms, and text), in order of preference.
var acceptedFormats = expfmt.DefaultAcceptedFormats()

func newScrapes(g prometheus.Gatherer, log *slog.Logger, maxRequests int) *scrapes {
	s := &scrapes{g: g, log: log, waiting: map[expfmt.Format]*rendering{}, reading: make(chan struct{}, renderSlots)}
	if maxRequests > 0 {
		s.sem = make(chan struct{}, maxRequests)
	}
	return s
}

func (s *scrapes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: scrape with GET", http.StatusMethodNotAllowed)
		return
	}
	if s.sem != nil {
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		default:
			http.Error(w, "too many parallel scrapes", http.StatusServiceUnavailable)
			return
		}
	}
	format := expfmt.NegotiateAccept(r.Header, acceptedFormats...)
	rd := s.rendered(format)
	defer s.served(rd)
	if errors.Is(rd.err, errScrapeMemory) {
		w.Header().Set("Retry-After", otlp.RetryAfter)
		http.Error(w, "scrape refused: "+rd.err.Error(), http.StatusServiceUnavailable)
		return
	}
	if rd.err != nil {
		s.log.Error("gathering metrics", "err", rd.err)
		if len(rd.gz) == 0 {
			http.Error(w, "gathering metrics failed: "+rd.err.Error(), http.StatusInternalServerError)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", string(format))
	h.Add("Vary", "Accept-Encoding")
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		if r.Method == http.MethodGet {
			_, _ = w.Write(rd.gz) // the scraper went away
		}
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(rd.gz))
	if err != nil { // our own bytes: cannot happen unless memory is corrupt
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = io.Copy(w, zr) // the scraper went away
}

// rendered returns the rendering of format that has not started reading
// the store yet, or makes one.
func (s *scrapes) rendered(format expfmt.Format) *rendering {
	s.mu.Lock()
	if rd := s.waiting[format]; rd != nil {
		rd.users++
		s.mu.Unlock()
		s.joined.Add(1)
		<-rd.done
		return rd
	}
	rd := &rendering{done: make(chan struct{}), users: 1, c: newCharge(s.mem)}
	s.waiting[format] = rd
	s.made.Add(1)
	s.mu.Unlock()

	s.reading <- struct{}{}
	// From here on the store is read: a scraper arriving now may have
	// pushed samples this rendering would miss, so it starts the next one.
	s.mu.Lock()
	delete(s.waiting, format)
	s.mu.Unlock()
	rd.c.deadline = time.Now().Add(scrapeMemoryWait)
	rd.gz, rd.err = s.encode(format, rd.c)
	<-s.reading
	close(rd.done)
	return rd
}

// served notes a scraper of rd served; the last one gives its memory
// back.
func (s *scrapes) served(rd *rendering) {
	s.mu.Lock()
	rd.users--
	last := rd.users == 0
	s.mu.Unlock()
	if last {
		rd.gz = nil
		rd.c.close()
	}
}

// encode gathers and encodes every family in format, gzipped. A gather
// error keeps what was gathered (as promhttp's ContinueOnError does).
func (s *scrapes) encode(format expfmt.Format, c *charge) ([]byte, error) {
	buf := &buffer{c: c}
	zw, _ := gzip.NewWriterLevel(buf, gzip.BestSpeed) // a valid level
	var gerr error
	if ex, ok := s.g.(exposer); ok {
		gerr = ex.expose(zw, format, c)
	} else {
		gerr = encodeAll(zw, s.g, format)
	}
	if errors.Is(gerr, errScrapeMemory) {
		return nil, gerr
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.b, gerr
}

// encodeAll gathers and encodes every family of g in format. A gather
// error keeps what was gathered.
func encodeAll(w io.Writer, g prometheus.Gatherer, format expfmt.Format) error {
	mfs, gerr := g.Gather()
	enc := expfmt.NewEncoder(w, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			return err
		}
	}
	return gerr
}

// acceptsGzip reports whether the request's Accept-Encoding offers gzip
// (with a non-zero weight).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
