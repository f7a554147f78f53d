package changepoint

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/envelope-dev/envelope/internal/figures"
)

// A checkpoint is what an Analyzer needs to take more runs and answer as
// a from-scratch analysis would, without the runs it will never read
// again: every run's derived values depend only on runs within a block or
// so of it, and a window's weak change points only on the runs inside
// it, so a series keeps its tail (the runs the next append re-derives or
// re-splits) whole, and of the runs before it only what the merge pass
// and the outlier list read: the runs at weak change points and the
// outlier runs, with their prefix sums. A command that records one run
// into a long history restores the checkpoint, appends, and analyses in
// the time of the tail, not of the history.

// ErrCheckpoint is wrapped by the errors of an Analyzer restored from a
// checkpoint that cannot take what it is asked (a series that turns to
// the linear scale, a drift reaching before its tail): the caller
// analyses from scratch instead.
var ErrCheckpoint = errors.New("beyond the checkpoint")

// checkpointVersion is the layout and meaning of a checkpoint: one of
// another version is refused, and the caller analyses from scratch.
const checkpointVersion = 2

type checkpoint struct {
	Version int
	Cfg     Config
	Series  []seriesCheckpoint
	// Keys are every series appended to, in order, with the line index
	// of its latest run and the runs it left out.
	Keys    []Key
	Last    []int
	Skipped []NotAnalysed
}

type seriesCheckpoint struct {
	Key    Key
	Pol    figures.Polarity
	Linear bool
	Y0     float64
	N      int
	// Tail is the first run kept whole (0-based in the series); Points
	// are the runs before it the analysis still reads, with their
	// derived values.
	Tail   int
	Points []pointCheckpoint
	// Runs[i] is run Tail+i, with its derived values; the prefix sums
	// run to N (one more entry); blocks from Tail/step on; windows by
	// their first run, their change points by run (0-based).
	Runs                 []Run
	IV, Sig2, Z          []float64
	PN                   []int
	PW, PWY, PWY2        []float64
	Scale, Tau2, Typ, VC []float64
	Windows              map[int][]int
	// FrozenWeak are the weak change points of the windows before the
	// tail, which no append re-runs.
	FrozenWeak []int
}

type pointCheckpoint struct {
	I             int
	Run           Run
	Y, Sig2, Z    float64
	PN            int
	PW, PWY, PWY2 float64
}

// tailStart is the first kept run (index in the arrays) the next append
// can read: the block before the one the appended run's re-derivation
// starts in, less a window.
func (s *series) tailStart() int {
	S, n := s.step(), len(s.runs)
	if n < 2*S || S+1 < 11 {
		// Early runs, or windows so short that a last block borrows the
		// first runs' spread (blockRange): everything is kept.
		return 0
	}
	t := min((n/S-1)*S, n-s.cfg.Neighbours) - s.cfg.Window - S
	return max(0, t/S*S)
}

// Checkpoint encodes the analyzer's state after Result (call Result
// first: a checkpoint of runs not yet analysed is refused).
func (a *Analyzer) Checkpoint() ([]byte, error) {
	cp := checkpoint{Version: checkpointVersion, Cfg: a.cfg, Keys: slices.Clone(a.keys)}
	for _, k := range a.keys {
		cp.Last = append(cp.Last, a.last[k])
		if na := a.skipped[k]; na != nil {
			cp.Skipped = append(cp.Skipped, *na)
		}
	}
	for _, k := range a.order {
		if s := a.series[k]; s.dirty < len(s.runs) || len(s.pn) != len(s.runs)+1 {
			return nil, fmt.Errorf("checkpoint of %s: runs appended since the last Result", k)
		}
	}
	// A family reads its figures at every tested figure's weak change
	// points: each figure keeps its runs there.
	extra := map[Key][]int{}
	for _, f := range a.families() {
		at := f.weakPoints()
		for _, s := range f.all {
			for _, j := range at {
				c := s.posOf(j)
				extra[s.key] = append(extra[s.key], c, c-1)
			}
		}
	}
	for _, k := range a.order {
		s := a.series[k]
		t := s.tailStart()
		sc := seriesCheckpoint{Key: k, Pol: s.pol, Linear: s.linear, Y0: s.y0, N: s.n(), Tail: s.off + t,
			Runs: slices.Clone(s.runs[t:]), IV: slices.Clone(s.iv[t:]), Sig2: slices.Clone(s.sig2[t:]), Z: slices.Clone(s.z[t:]),
			PN: slices.Clone(s.pn[t:]), PW: slices.Clone(s.pw[t:]), PWY: slices.Clone(s.pwy[t:]), PWY2: slices.Clone(s.pwy2[t:]),
			Windows: map[int][]int{}}
		b := t / s.step()
		sc.Scale, sc.Tau2, sc.Typ, sc.VC = slices.Clone(s.scale[b:]), slices.Clone(s.tau2[b:]), slices.Clone(s.typ[b:]), slices.Clone(s.vc[b:])
		// The runs before the tail the analysis still reads: weak change
		// points (segment bounds of the merge pass) and the runs before
		// them (a suspected step's last run at the level before), and
		// outliers.
		keep := map[int]bool{}
		frozen := slices.Clone(s.frozenWeak)
		for start, cps := range s.windows {
			if start < t {
				frozen = append(frozen, cps...)
				continue
			}
			g := make([]int, len(cps))
			for j, c := range cps {
				g[j] = c + s.off
				if c < t {
					keep[c], keep[c-1] = true, true
				}
			}
			sc.Windows[start+s.off] = g
		}
		slices.Sort(frozen)
		for _, c := range slices.Compact(frozen) {
			if c < t {
				keep[c], keep[c-1] = true, true
			}
			sc.FrozenWeak = append(sc.FrozenWeak, c+s.off)
		}
		for i, f := range s.frozen {
			if f.z != 0 {
				keep[i] = true
			}
		}
		for _, i := range extra[k] {
			if i < t && i >= -s.off {
				keep[i] = true
			}
		}
		for i := range t {
			if s.z[i] != 0 {
				keep[i] = true
			}
		}
		for _, i := range slices.Sorted(maps.Keys(keep)) {
			if _, ok := s.frozen[i]; i < 0 && !ok {
				continue // before the series, or left out of the checkpoint restored
			}
			r, y, sig2, z := s.runPoint(i)
			pn, pw, pwy, pwy2 := s.prefix(i)
			sc.Points = append(sc.Points, pointCheckpoint{I: i + s.off, Run: r, Y: y, Sig2: sig2, Z: z, PN: pn, PW: pw, PWY: pwy, PWY2: pwy2})
		}
		cp.Series = append(cp.Series, sc)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(cp); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return buf.Bytes(), nil
}

// Restore is the Analyzer a checkpoint was taken of: appending runs to
// it and reading its Result gives what appending them to the original
// (or analysing every run from scratch) gives.
func Restore(data []byte) (*Analyzer, error) {
	var cp checkpoint
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&cp); err != nil {
		return nil, fmt.Errorf("restore checkpoint: %w", err)
	}
	if cp.Version != checkpointVersion {
		return nil, fmt.Errorf("restore checkpoint: version %d, want %d", cp.Version, checkpointVersion)
	}
	if len(cp.Last) != len(cp.Keys) {
		return nil, fmt.Errorf("restore checkpoint: %d keys with %d latest runs", len(cp.Keys), len(cp.Last))
	}
	a, err := New(cp.Cfg)
	if err != nil {
		return nil, fmt.Errorf("restore checkpoint: %w", err)
	}
	if a.cfg != cp.Cfg {
		return nil, fmt.Errorf("restore checkpoint: configuration %+v is not complete", cp.Cfg)
	}
	for _, sc := range cp.Series {
		if _, dup := a.series[sc.Key]; dup {
			return nil, fmt.Errorf("restore checkpoint: series %s twice", sc.Key)
		}
		s, err := restoreSeries(sc, a.cfg)
		if err != nil {
			return nil, fmt.Errorf("restore checkpoint: %s: %w", sc.Key, err)
		}
		a.series[sc.Key] = s
		a.order = append(a.order, sc.Key)
	}
	for i, k := range cp.Keys {
		if _, dup := a.last[k]; dup {
			return nil, fmt.Errorf("restore checkpoint: key %s twice", k)
		}
		a.keys = append(a.keys, k)
		a.last[k] = cp.Last[i]
	}
	for _, na := range cp.Skipped {
		if _, ok := a.last[na.Key]; !ok {
			return nil, fmt.Errorf("restore checkpoint: runs left out of %s, a series it lacks", na.Key)
		}
		a.skipped[na.Key] = &na
	}
	return a, nil
}

func restoreSeries(sc seriesCheckpoint, cfg Config) (*series, error) {
	S := cfg.Window / 2
	t, m := sc.Tail, sc.N-sc.Tail
	nb := (m + S - 1) / S
	if t < 0 || m < 1 || t%S != 0 || len(sc.Runs) != m || len(sc.IV) != m || len(sc.Sig2) != m || len(sc.Z) != m ||
		len(sc.PN) != m+1 || len(sc.PW) != m+1 || len(sc.PWY) != m+1 || len(sc.PWY2) != m+1 ||
		len(sc.Scale) != nb || len(sc.Tau2) != nb || len(sc.Typ) != nb || len(sc.VC) != nb {
		return nil, errors.New("inconsistent lengths")
	}
	s := newSeries(sc.Key, sc.Pol, cfg)
	s.linear, s.y0, s.off = sc.Linear, sc.Y0, t
	s.frozen = make(map[int]frozenRun, len(sc.Points))
	for _, p := range sc.Points {
		if p.I < 0 || p.I >= t {
			return nil, fmt.Errorf("point %d outside the runs before the tail", p.I)
		}
		s.frozen[p.I-t] = frozenRun{run: p.Run, y: p.Y, sig2: p.Sig2, z: p.Z, pn: p.PN, pw: p.PW, pwy: p.PWY, pwy2: p.PWY2}
	}
	s.frozenAt = slices.Sorted(maps.Keys(s.frozen))
	s.runs = sc.Runs
	s.y, s.v = make([]float64, m), make([]float64, m)
	for i, r := range sc.Runs {
		s.y[i] = s.transform(r.Value) - s.y0
		s.v[i] = s.ownVar(r)
	}
	s.iv, s.sig2, s.z = sc.IV, sc.Sig2, sc.Z
	s.pn, s.pw, s.pwy, s.pwy2 = sc.PN, sc.PW, sc.PWY, sc.PWY2
	s.scale, s.tau2, s.typ, s.vc = sc.Scale, sc.Tau2, sc.Typ, sc.VC
	for _, c := range sc.FrozenWeak {
		if _, ok := s.frozen[c-t]; !ok && c < t || c >= sc.N {
			return nil, fmt.Errorf("change point at run %d left out", c)
		}
		s.frozenWeak = append(s.frozenWeak, c-t)
	}
	for start, cps := range sc.Windows {
		if start%S != 0 || start < t {
			return nil, fmt.Errorf("window at run %d", start)
		}
		local := make([]int, len(cps))
		for j, c := range cps {
			local[j] = c - t
			if c < t {
				if _, ok := s.frozen[c-t]; !ok {
					return nil, fmt.Errorf("change point at run %d left out", c)
				}
			}
		}
		s.windows[start-t] = local
	}
	s.dirty = m
	return s, nil
}
