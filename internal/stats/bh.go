package stats

import "sort"

// BenjaminiHochberg adjusts p-values by Benjamini and Hochberg's step-up
// method, which controls the false discovery rate of a family of m
// hypotheses when the tests are independent or positively dependent:
// sorted ascending, the i-th (1-based) p-value becomes
// min over j ≥ i of min(1, m·p_j/j). m may exceed len(p) when the family
// holds hypotheses whose p-values were not small enough to be listed
// (they rank after every listed one); m below len(p) counts as len(p).
// The result is in the input's order; NaN p-values stay NaN and are not
// counted.
func BenjaminiHochberg(p []float64, m int) []float64 {
	idx := make([]int, 0, len(p))
	out := make([]float64, len(p))
	for i, v := range p {
		if v == v { // not NaN
			idx = append(idx, i)
		} else {
			out[i] = v
		}
	}
	m = max(m, len(idx))
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	running := 1.0
	for r := len(idx) - 1; r >= 0; r-- {
		i := idx[r]
		adj := float64(m) * p[i] / float64(r+1)
		if adj < running {
			running = adj
		}
		out[i] = running
	}
	return out
}
