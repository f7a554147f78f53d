package changepoint

import (
	"math"
	"slices"

	"github.com/envelope-dev/envelope/internal/stats"
)

// Apache Otava's change-point method with its defaults (window 50, step
// 25, p 0.001, a weak pass at 10×, Student's t, minimum magnitude 0, no
// minimum segment), reimplemented from its published algorithm (Fleming
// et al., ICPE 2023, and the project's documentation) on the same values
// it would read: the raw figures. It is the yardstick of the power table.

// otavaChanges are the indices (0-based, first run of the new segment)
// of Otava's change points of one series.
func otavaChanges(x []float64, window int, pmax float64) []int {
	return otavaMerge(otavaSplit(x, window, pmax*10), x, pmax)
}

func otavaSplit(x []float64, window int, p float64) []int {
	var cps []int
	start, step := 0, window/2
	for start < len(x) {
		end := min(start+window, len(x))
		last := 0
		for _, c := range otavaDetect(x[start:end], p) {
			if !slices.Contains(cps, c+start) {
				cps = append(cps, c+start)
			}
			last = max(last, c+start)
		}
		start = max(last, start+step)
	}
	slices.Sort(cps)
	return cps
}

// otavaDetect is E-Divisive means on one window: the candidate of the
// interval (between change points found so far) with the largest
// statistic, kept while its t-test against its interval's sides passes.
func otavaDetect(z []float64, p float64) []int {
	var cps []int
	for {
		bounds := append(append([]int{0}, cps...), len(z))
		bestQ, bestTau, bestK := math.Inf(-1), -1, -1
		for k := 0; k+1 < len(bounds); k++ {
			a, b := bounds[k], bounds[k+1]
			if b-a < 2 {
				continue
			}
			if tau, q := otavaCandidate(z[a:b]); q > bestQ {
				bestQ, bestTau, bestK = q, a+tau, k
			}
		}
		if bestTau < 0 || studentP(z[bounds[bestK]:bestTau], z[bestTau:bounds[bestK+1]]) > p {
			return cps
		}
		cps = append(cps, bestTau)
		slices.Sort(cps)
	}
}

// otavaCandidate maximises Q(X, Y) over X = z[0:τ], Y = z[τ:κ] for every
// 1 ≤ τ < κ ≤ len(z), as Otava does.
func otavaCandidate(z []float64) (tau int, q float64) {
	n := len(z)
	// pairs[a][b] = Σ_{a≤i<j<b} |z_i − z_j|
	pairs := make([][]float64, n+1)
	for a := range pairs {
		pairs[a] = make([]float64, n+1)
	}
	for a := n - 1; a >= 0; a-- {
		row := 0.0
		for b := a + 1; b <= n; b++ {
			if b-1 > a {
				row += math.Abs(z[a] - z[b-1])
			}
			pairs[a][b] = pairs[a+1][b] + row
		}
	}
	q = math.Inf(-1)
	for t := 1; t < n; t++ {
		for k := t + 1; k <= n; k++ {
			nx, ny := float64(t), float64(k-t)
			cross := pairs[0][k] - pairs[0][t] - pairs[t][k]
			v := 2 / (nx + ny) * cross
			if nx > 1 {
				v -= 2 * ny / ((nx + ny) * (nx - 1)) * pairs[0][t]
			}
			if ny > 1 {
				v -= 2 * nx / ((nx + ny) * (ny - 1)) * pairs[t][k]
			}
			if v > q {
				tau, q = t, v
			}
		}
	}
	return tau, q
}

// otavaMerge drops the weakest point until every one has p < pmax.
func otavaMerge(cps []int, x []float64, pmax float64) []int {
	for len(cps) > 0 {
		worst, worstP := -1, -1.0
		for j := range cps {
			a, b := 0, len(x)
			if j > 0 {
				a = cps[j-1]
			}
			if j+1 < len(cps) {
				b = cps[j+1]
			}
			if p := studentP(x[a:cps[j]], x[cps[j]:b]); p > worstP {
				worst, worstP = j, p
			}
		}
		if worstP < pmax {
			return cps
		}
		cps = slices.Delete(cps, worst, worst+1)
	}
	return cps
}

// studentP is the two-sided p-value of Student's equal-variance t-test.
func studentP(l, r []float64) float64 {
	n1, n2 := float64(len(l)), float64(len(r))
	df := n1 + n2 - 2
	if df <= 0 {
		return 1
	}
	m1, v1 := stats.MeanVar(l)
	m2, v2 := stats.MeanVar(r)
	sp2 := ((n1-1)*v1 + (n2-1)*v2) / df
	se := math.Sqrt(sp2 * (1/n1 + 1/n2))
	if !(se > 0) {
		if m1 == m2 {
			return 1
		}
		return 0
	}
	return 2 * (1 - stats.TCDF(math.Abs(m2-m1)/se, df))
}
