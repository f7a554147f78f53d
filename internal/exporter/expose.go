package exporter

// The scrape's rendering of the store: families are encoded one at a
// time, and histogram families one series at a time, so that a scrape
// holds the encoded bytes of one family, never a decoded copy of every
// series (a copied native bucket costs about 90 bytes of spans and
// pointers; encoded, a few).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// exposer writes every family it serves to w in format, sorted by name,
// charging what it holds to c. A gather error keeps what was written (as
// promhttp's ContinueOnError does).
type exposer interface {
	expose(w io.Writer, format expfmt.Format, c *charge) error
}

// textChunk is how many histogram series one text rendering step holds
// decoded.
const textChunk = 64

// expose writes the registry's families and the store's, merged by name;
// a name the registry already has keeps the registry's family.
func (m merged) expose(w io.Writer, format expfmt.Format, c *charge) error {
	mfs, gerr := m.reg.Gather()
	enc := expfmt.NewEncoder(w, format)
	fams := m.st.byName()
	i := 0
	for _, f := range fams {
		for ; i < len(mfs) && mfs[i].GetName() < f.name; i++ {
			if err := enc.Encode(mfs[i]); err != nil {
				return err
			}
		}
		if i < len(mfs) && mfs[i].GetName() == f.name {
			continue
		}
		if err := f.expose(w, enc, format, c); err != nil {
			return err
		}
	}
	for ; i < len(mfs); i++ {
		if err := enc.Encode(mfs[i]); err != nil {
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

// expose writes one family. Histograms are encoded series by series in
// protobuf and text; other families (a few scalars per series) and other
// formats are encoded whole.
func (f *family) expose(w io.Writer, enc expfmt.Encoder, format expfmt.Format, c *charge) error {
	if f.typ != k6.Trend {
		if mf := f.metricFamily(); mf != nil {
			return enc.Encode(mf)
		}
		return nil
	}
	list := f.snapshot()
	if len(list) == 0 {
		return nil
	}
	switch format.FormatType() {
	case expfmt.TypeProtoDelim:
		return f.exposeProto(w, list, c)
	case expfmt.TypeTextPlain:
		return f.exposeText(w, list, c)
	}
	mf := f.header()
	ms := make([]dto.Metric, len(list))
	mf.Metric = make([]*dto.Metric, len(list))
	for i, s := range list {
		f.write(s, 0, &ms[i])
		mf.Metric[i] = &ms[i]
	}
	return enc.Encode(mf)
}

// header is the family without its metrics.
func (f *family) header() *dto.MetricFamily {
	return &dto.MetricFamily{Name: ptr(f.name), Help: ptr(f.help), Type: dto.MetricType_HISTOGRAM.Enum()}
}

// exposeProto writes a histogram family as one length-delimited
// MetricFamily message, the bytes expfmt's encoder writes: the header
// fields, then each metric as field 4, encoded as it is read.
func (f *family) exposeProto(w io.Writer, list []*series, c *charge) error {
	head, err := proto.Marshal(f.header())
	if err != nil {
		return err
	}
	const metricField = 4 // MetricFamily.metric
	body := blocks{c: c}
	defer body.free()
	var m dto.Metric
	var enc []byte
	for _, s := range list {
		m = dto.Metric{}
		f.write(s, 0, &m)
		enc = protowire.AppendTag(enc[:0], metricField, protowire.BytesType)
		enc = protowire.AppendVarint(enc, uint64(proto.Size(&m)))
		if enc, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(enc, &m); err != nil {
			return err
		}
		if err := body.write(enc); err != nil {
			return err
		}
	}
	if _, err := w.Write(protowire.AppendVarint(nil, uint64(len(head)+body.n))); err != nil {
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	for _, b := range body.list {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// blocks holds bytes in fixed blocks, each charged to c: growing it never
// copies what it holds, so its peak is its length plus one block.
type blocks struct {
	c    *charge
	list [][]byte
	n    int
}

const blockSize = 256 << 10

func (b *blocks) write(p []byte) error {
	b.n += len(p)
	for len(p) > 0 {
		if k := len(b.list) - 1; k >= 0 && len(b.list[k]) < cap(b.list[k]) {
			last := b.list[k]
			n := copy(last[len(last):cap(last)], p)
			b.list[k] = last[:len(last)+n]
			p = p[n:]
			continue
		}
		if err := b.c.take(blockSize); err != nil {
			return err
		}
		b.list = append(b.list, make([]byte, 0, blockSize))
	}
	return nil
}

// free gives the blocks' charge back.
func (b *blocks) free() {
	b.c.give(int64(len(b.list)) * blockSize)
	b.list = nil
}

// buffer is a growing byte slice whose capacity is charged to c.
type buffer struct {
	c *charge
	b []byte
}

func (b *buffer) Write(p []byte) (int, error) {
	if need := len(b.b) + len(p); need > cap(b.b) {
		n := max(2*cap(b.b), need, 4096)
		if err := b.c.take(int64(n)); err != nil {
			return 0, err
		}
		grown := make([]byte, len(b.b), n)
		copy(grown, b.b)
		b.c.give(int64(cap(b.b)))
		b.b = grown
	}
	b.b = append(b.b, p...)
	return len(p), nil
}

// errScrapeMemory refuses a rendering that found no room in the memory
// account shared with the OTLP receiver in time.
var errScrapeMemory = errors.New("the memory budget shared with OTLP requests is in use")

// scrapeMemoryWait is how long a rendering waits for room in the memory
// account, in all, before it is refused: as long as an OTLP request waits
// for a decoding slot.
const scrapeMemoryWait = otlp.BusyWait

// charge is what one rendering holds in the memory account it shares with
// the OTLP receiver (Config.OTLPMemoryBudget): its buffers are charged as
// they grow, so OTLP bodies and scrapes have one bound together. A nil
// charge, or one without an account, charges nothing.
type charge struct {
	mem      *otlp.Memory
	held     int64
	deadline time.Time
}

func newCharge(mem *otlp.Memory) *charge {
	return &charge{mem: mem, deadline: time.Now().Add(scrapeMemoryWait)}
}

// take charges n bytes, waiting for room until the deadline.
func (c *charge) take(n int64) error {
	if c == nil || c.mem == nil {
		return nil
	}
	for !c.mem.Charge(n) {
		if time.Now().After(c.deadline) {
			return fmt.Errorf("%w (%d of %d bytes held): retry later", errScrapeMemory, c.mem.Load(), c.mem.Limit())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.held += n
	return nil
}

// give returns n charged bytes.
func (c *charge) give(n int64) {
	if c == nil || c.mem == nil || n == 0 {
		return
	}
	c.held -= n
	c.mem.Add(-n)
}

// close returns everything still charged.
func (c *charge) close() { c.give(c.held) }

// exposeText writes a histogram family textChunk series at a time,
// without their native buckets (the text format has none); every
// chunk after the first drops the HELP and TYPE lines the text encoder
// starts a family with (help text has its newlines escaped).
func (f *family) exposeText(w io.Writer, list []*series, c *charge) error {
	buf := buffer{c: c}
	defer func() { c.give(int64(cap(buf.b))) }()
	ms := make([]dto.Metric, min(textChunk, len(list)))
	for start := 0; start < len(list); start += textChunk {
		chunk := list[start:min(start+textChunk, len(list))]
		mf := f.header()
		mf.Metric = make([]*dto.Metric, len(chunk))
		for i, s := range chunk {
			ms[i] = dto.Metric{Label: s.pairs[0], Histogram: &dto.Histogram{}}
			s.h.writeParts(ms[i].Histogram, f.boundPtrs, false)
			mf.Metric[i] = &ms[i]
		}
		buf.b = buf.b[:0]
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			return err
		}
		b := buf.b
		if start > 0 {
			for range 2 {
				if i := bytes.IndexByte(b, '\n'); i >= 0 {
					b = b[i+1:]
				}
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// byName lists the families by Prometheus series name, the order a scrape
// serves them in.
func (st *store) byName() []*family {
	out := st.sortedFamilies()
	slices.SortFunc(out, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	return out
}
