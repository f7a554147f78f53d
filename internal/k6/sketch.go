package k6

import "github.com/envelope-dev/envelope/internal/stats"

// collector watches the memory held by exact trend samples and, past the
// budget, folds them into sketches.
type collector struct {
	sh *shared
}

func (c *collector) add(r *chunkResult) {
	sh := c.sh
	for _, o := range r.trends {
		if o != nil {
			sh.held.Add(int64(8*len(o.vals) + 2*len(o.cls)))
		}
	}
	if !sh.sketch.Load() && sh.opts.MemoryBudget > 0 && sh.held.Load() > sh.opts.MemoryBudget {
		sh.sketch.Store(true)
	}
}

// foldToSketch folds the chunks kept in exact mode into per-class sketches,
// after a switch to sketch mode (the memory budget was reached).
func foldToSketch(all []*chunkResult, into [][]*stats.Sketch) [][]*stats.Sketch {
	for _, r := range all {
		if r == nil {
			continue
		}
		for mi, o := range r.trends {
			if o == nil {
				continue
			}
			for len(into) <= mi {
				into = append(into, nil)
			}
			for j, v := range o.vals {
				cls := 0
				if o.cls != nil {
					cls = int(o.cls[j])
				}
				for len(into[mi]) <= cls {
					into[mi] = append(into[mi], nil)
				}
				if into[mi][cls] == nil {
					into[mi][cls] = &stats.Sketch{}
				}
				into[mi][cls].Add(v)
			}
			r.trends[mi] = nil
		}
	}
	return into
}

// foldSketches merges the workers' sketches and the chunks kept before a
// switch to sketch mode, and records the samples and bytes they hold.
func foldSketches(run *Run, workers []*worker, all []*chunkResult) [][]*stats.Sketch {
	run.Mode = ModeSketch
	var sketches [][]*stats.Sketch
	for _, w := range workers {
		for mi, row := range w.sketches {
			for len(sketches) <= mi {
				sketches = append(sketches, nil)
			}
			for ci, sk := range row {
				if sk == nil {
					continue
				}
				for len(sketches[mi]) <= ci {
					sketches[mi] = append(sketches[mi], nil)
				}
				if sketches[mi][ci] == nil {
					sketches[mi][ci] = &stats.Sketch{}
				}
				sketches[mi][ci].Merge(sk)
			}
		}
	}
	sketches = foldToSketch(all, sketches)
	for _, row := range sketches {
		for _, sk := range row {
			if sk != nil {
				run.TrendSamples += int64(sk.Count())
				run.HeldBytes += int64(sk.Bytes())
			}
		}
	}
	for _, w := range workers {
		for _, row := range w.sketches {
			for _, sk := range row {
				if sk != nil {
					run.HeldBytes += int64(sk.Bytes())
				}
			}
		}
	}
	return sketches
}
