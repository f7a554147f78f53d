package stats

import (
	"math"
	"sort"
)

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

// WeightedHolm is Holm's step-down method with weights (Holm 1979): the
// p-values are ordered by p/w, and the one at rank j (0-based) becomes
// max over k<=j of min(1, p_k/w_k · Σ_{l>=k} w_l), with the weights of
// the tested p-values summing to 1. It controls the family-wise error
// rate like Holm's, and spends more of it on the figures given more
// weight. Equal weights give Holm's method; NaN p-values are left NaN
// and their weight is shared among the others.
func WeightedHolm(p, w []float64) []float64 {
	idx := make([]int, 0, len(p))
	total := 0.0
	for i, v := range p {
		if v == v && w[i] > 0 {
			idx = append(idx, i)
			total += w[i]
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]]/w[idx[a]] < p[idx[b]]/w[idx[b]] })
	out := make([]float64, len(p))
	for i := range p {
		out[i] = math.NaN()
	}
	rest, running := 1.0, 0.0
	for _, i := range idx {
		wi := w[i] / total
		adj := math.Min(1, p[i]/wi*rest)
		running = math.Max(running, adj)
		out[i] = running
		rest -= wi
	}
	return out
}

// FixedSequence adjusts p-values tested in a fixed order, each at the
// full level until the first that is not rejected (a hierarchical test):
// the i-th becomes max over j<=i of p_j. It controls the family-wise
// error rate without dividing the level, at the price that a figure
// later in the order is rejected only after every earlier one is. NaN
// p-values are left NaN and skipped.
func FixedSequence(p []float64) []float64 {
	out := make([]float64, len(p))
	running := 0.0
	for i, v := range p {
		if v != v {
			out[i] = v
			continue
		}
		running = math.Max(running, v)
		out[i] = running
	}
	return out
}
