package changepoint

import "math"

// splitWindow is E-Divisive means over the kept runs of [lo, hi): the
// split that maximises the energy statistic within the current segments
// is tested against its neighbouring segments at the weak p-value; while
// it passes, it is kept and the segments are split again. Both sides of
// every split keep MinRuns runs. It returns the runs (global indices)
// that start a new segment.
func (s *series) splitWindow(lo, hi int) []int {
	idx := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		if s.z[i] == 0 {
			idx = append(idx, i)
		}
	}
	m, minRuns := len(idx), s.cfg.MinRuns
	if m < 2*minRuns {
		return nil
	}
	z := make([]float64, m)
	for j, i := range idx {
		z[j] = s.y[i]
	}
	weak := s.cfg.PValue * s.cfg.WeakFactor
	cuts := []int{0, m} // segment bounds, positions in idx
	var out []int
	for {
		bestQ, bestPos, bestSeg := math.Inf(-1), -1, -1
		for k := 0; k+1 < len(cuts); k++ {
			a, b := cuts[k], cuts[k+1]
			if b-a < 2*minRuns {
				continue
			}
			if tau, q, ok := energySplit(z[a:b], minRuns); ok && q > bestQ {
				bestQ, bestPos, bestSeg = q, a+tau, k
			}
		}
		if bestPos < 0 {
			break
		}
		a, b := cuts[bestSeg], cuts[bestSeg+1]
		end := hi
		if b < m {
			end = idx[b]
		}
		if s.tTest(idx[a], idx[bestPos], end) > weak {
			break
		}
		cuts = append(cuts[:bestSeg+1], append([]int{bestPos}, cuts[bestSeg+1:]...)...)
		out = append(out, idx[bestPos])
	}
	return out
}

// energySplit is the split τ of z maximising the E-Divisive statistic
// with exponent 1,
// q(τ) = nL·nR/n · (2/(nL·nR)·Σ|x−y| − Σ_L|x−x'|/C(nL,2) − Σ_R|y−y'|/C(nR,2)),
// every sum over pairs (a side of one value has no within term), in
// O(n²) time and O(1) memory. ok is false when the best split leaves
// fewer than minRuns values on a side: the level moved too near an end
// to say where yet, and the next run may tell.
func energySplit(z []float64, minRuns int) (tau int, q float64, ok bool) {
	n := len(z)
	total := 0.0
	for i := range n {
		for j := i + 1; j < n; j++ {
			total += math.Abs(z[i] - z[j])
		}
	}
	within := func(sum, k float64) float64 {
		if k < 2 {
			return 0
		}
		return sum / (k * (k - 1) / 2)
	}
	left, right := 0.0, total
	best := math.Inf(-1)
	for t := 1; t < n; t++ {
		x := z[t-1] // moves from the right set to the left
		for i := 0; i < t-1; i++ {
			left += math.Abs(z[i] - x)
		}
		for j := t; j < n; j++ {
			right -= math.Abs(x - z[j])
		}
		nl, nr := float64(t), float64(n-t)
		cross := total - left - right
		v := nl * nr / float64(n) * (2*cross/(nl*nr) - within(left, nl) - within(right, nr))
		if v > best {
			tau, best = t, v
		}
	}
	return tau, best, tau >= minRuns && n-tau >= minRuns
}
