package stats

import "sort"

// Holm adjusts p-values for multiple comparisons by Holm's step-down
// method, which controls the family-wise error rate: sorted ascending,
// the i-th (0-based) of m p-values becomes max over j<=i of
// min(1, (m-j)·p_j). The result is in the input's order. NaN p-values
// (figures without a test) are left NaN and not counted in m.
func Holm(p []float64) []float64 {
	idx := make([]int, 0, len(p))
	for i, v := range p {
		if v == v { // not NaN
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	out := make([]float64, len(p))
	for i, v := range p {
		if v != v {
			out[i] = v
		}
	}
	m := len(idx)
	running := 0.0
	for rank, i := range idx {
		adj := float64(m-rank) * p[i]
		if adj > 1 {
			adj = 1
		}
		if adj > running {
			running = adj
		}
		out[i] = running
	}
	return out
}
