package stats

import (
	"errors"
	"fmt"
	"math"
)

// USL is a fitted Universal Scalability Law model,
//
//	X(N) = λN / (1 + σ(N-1) + κN(N-1))
//
// with σ the contention (serial fraction), κ the coherency (crosstalk)
// cost and λ the throughput of one unit of concurrency.
type USL struct {
	Sigma  float64 `json:"sigma"`
	Kappa  float64 `json:"kappa"`
	Lambda float64 `json:"lambda"`
	Points int     `json:"points"`
	// Levels is the number of distinct concurrencies among the points.
	Levels int     `json:"levels"`
	RSS    float64 `json:"rss"` // residual sum of squares
	// R2 is the coefficient of determination. It is evidence of the
	// model only when the fit has degrees of freedom left
	// (DegreesOfFreedom > 0): three parameters through three levels'
	// throughputs fit any three values, and R² near 1 then says nothing.
	R2 float64 `json:"r2"`
}

// USLParams is the number of the USL's parameters (σ, κ, λ): a fit needs
// at least this many distinct concurrencies to identify them, and one
// more to have anything left to check them against.
const USLParams = 3

// DegreesOfFreedom is what the fit has left to be checked with: its
// distinct concurrencies beyond the USL's three parameters. Replicate
// runs at one level add none: they measure the noise at that level, not
// the curve between levels.
func (u USL) DegreesOfFreedom() int { return u.Levels - USLParams }

// Throughput is the model's X(n).
func (u USL) Throughput(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// Peak is the concurrency of maximum throughput, √((1-σ)/κ); +Inf when
// κ = 0 (throughput approaches λ/σ and never turns down).
func (u USL) Peak() float64 {
	if u.Kappa <= 0 {
		return math.Inf(1)
	}
	return math.Sqrt((1 - u.Sigma) / u.Kappa)
}

// MaxThroughput is X at Peak, or the Amdahl ceiling λ/σ when κ = 0
// (+Inf when σ = κ = 0: linear scaling).
func (u USL) MaxThroughput() float64 {
	if u.Kappa <= 0 {
		if u.Sigma <= 0 {
			return math.Inf(1)
		}
		return u.Lambda / u.Sigma
	}
	return u.Throughput(u.Peak())
}

// LinearLimit is the concurrency at which the model's efficiency
// X(N)/(λN) falls to eff (0 < eff < 1): beyond it, throughput no longer
// scales (near-)linearly. It solves σ(N-1) + κN(N-1) = 1/eff - 1.
func (u USL) LinearLimit(eff float64) float64 {
	c := 1/eff - 1
	if u.Kappa <= 0 {
		if u.Sigma <= 0 {
			return math.Inf(1)
		}
		return 1 + c/u.Sigma
	}
	b := u.Sigma - u.Kappa
	return (-b + math.Sqrt(b*b+4*u.Kappa*(u.Sigma+c))) / (2 * u.Kappa)
}

// FitUSL fits σ, κ and λ to measured (concurrency, throughput) points by
// bounded nonlinear least squares: Levenberg–Marquardt steps projected
// onto σ∈[0,1], κ∈[0,1], λ>0, started from Gunther's quadratic
// linearisation and from fixed seeds, keeping the best fit. It needs at
// least USLParams (3) distinct concurrencies, which identify σ, κ and λ
// but leave the fit nothing to be checked with; 4 or more leave it degrees
// of freedom, and 6 or more spread past the peak give stable estimates.
func FitUSL(n, x []float64) (USL, error) {
	if len(n) != len(x) {
		return USL{}, fmt.Errorf("%d concurrency levels but %d throughputs", len(n), len(x))
	}
	if len(n) < USLParams {
		return USL{}, fmt.Errorf("%d point(s): a USL fit needs at least %d", len(n), USLParams)
	}
	distinct := map[float64]bool{}
	maxRate := 0.0
	for i := range n {
		if !(n[i] > 0) || math.IsInf(n[i], 0) {
			return USL{}, fmt.Errorf("point %d: concurrency %v must be positive", i+1, n[i])
		}
		if !(x[i] > 0) || math.IsInf(x[i], 0) {
			return USL{}, fmt.Errorf("point %d: throughput %v must be positive", i+1, x[i])
		}
		distinct[n[i]] = true
		maxRate = math.Max(maxRate, x[i]/n[i])
	}
	if len(distinct) < 2 {
		return USL{}, errors.New("all points share one concurrency level: nothing to fit")
	}
	if len(distinct) < USLParams {
		return USL{}, fmt.Errorf("%d distinct concurrency levels: the USL's %d parameters need at least %d to be identified", len(distinct), USLParams, USLParams)
	}
	seeds := [][3]float64{
		usl4Gunther(n, x, maxRate),
		{0.1, 0.01, maxRate},
		{0, 0, maxRate},
		{0.01, 1e-4, maxRate},
		{0.3, 0, maxRate},
		{0.05, 1e-3, maxRate},
	}
	best := USL{RSS: math.Inf(1)}
	for _, s := range seeds {
		p := uslLM(n, x, s)
		rss := uslRSS(n, x, p)
		if rss < best.RSS {
			best = USL{Sigma: p[0], Kappa: p[1], Lambda: p[2], RSS: rss}
		}
	}
	best.Points, best.Levels = len(n), len(distinct)
	var my float64
	for _, v := range x {
		my += v
	}
	my /= float64(len(x))
	var tss float64
	for _, v := range x {
		tss += (v - my) * (v - my)
	}
	if tss > 0 {
		best.R2 = 1 - best.RSS/tss
	} else {
		best.R2 = 1
	}
	return best, nil
}

// usl4Gunther seeds σ and κ from y = κx² + (σ+κ)x with x = N-1 and
// y = N/C(N) - 1, C(N) = X(N)/λ, fitted through the origin.
func usl4Gunther(n, x []float64, lambda float64) [3]float64 {
	var s22, s23, s33, sy2, sy3 float64 // x², x³, x⁴ sums and y·x, y·x²
	for i := range n {
		xx := n[i] - 1
		y := n[i]/(x[i]/lambda) - 1
		s22 += xx * xx
		s23 += xx * xx * xx
		s33 += xx * xx * xx * xx
		sy2 += y * xx
		sy3 += y * xx * xx
	}
	det := s33*s22 - s23*s23
	if det == 0 {
		return [3]float64{0.1, 0.01, lambda}
	}
	a := (sy3*s22 - sy2*s23) / det // κ
	b := (s33*sy2 - s23*sy3) / det // σ+κ
	return uslClamp([3]float64{b - a, a, lambda})
}

func uslClamp(p [3]float64) [3]float64 {
	p[0] = math.Min(math.Max(p[0], 0), 1)
	p[1] = math.Min(math.Max(p[1], 0), 1)
	if !(p[2] > 1e-12) {
		p[2] = 1e-12
	}
	return p
}

func uslRSS(n, x []float64, p [3]float64) float64 {
	u := USL{Sigma: p[0], Kappa: p[1], Lambda: p[2]}
	var s float64
	for i := range n {
		r := x[i] - u.Throughput(n[i])
		s += r * r
	}
	return s
}

// uslLM runs projected Levenberg–Marquardt from p with the analytic
// Jacobian: ∂X/∂λ = N/D, ∂X/∂σ = -λN(N-1)/D², ∂X/∂κ = -λN²(N-1)/D².
func uslLM(n, x []float64, p [3]float64) [3]float64 {
	p = uslClamp(p)
	rss := uslRSS(n, x, p)
	mu := 1e-3
	for iter := 0; iter < 1000 && mu < 1e15; iter++ {
		var jtj [3][3]float64
		var jtr [3]float64
		for i := range n {
			N := n[i]
			d := 1 + p[0]*(N-1) + p[1]*N*(N-1)
			f := p[2] * N / d
			j := [3]float64{-p[2] * N * (N - 1) / (d * d), -p[2] * N * N * (N - 1) / (d * d), N / d}
			r := x[i] - f
			for a := 0; a < 3; a++ {
				jtr[a] += j[a] * r
				for b := 0; b < 3; b++ {
					jtj[a][b] += j[a] * j[b]
				}
			}
		}
		var m [3][3]float64
		for a := 0; a < 3; a++ {
			m[a] = jtj[a]
			m[a][a] += mu * math.Max(jtj[a][a], 1e-30)
		}
		delta, ok := uslSolve3(m, jtr)
		if !ok {
			mu *= 10
			continue
		}
		q := uslClamp([3]float64{p[0] + delta[0], p[1] + delta[1], p[2] + delta[2]})
		nrss := uslRSS(n, x, q)
		if nrss < rss {
			improved := rss - nrss
			p, rss = q, nrss
			mu = math.Max(mu/3, 1e-12)
			if improved <= 1e-15*math.Max(rss, 1e-300) {
				break
			}
		} else {
			mu *= 4
		}
	}
	return p
}

// uslSolve3 solves a 3×3 system by Gaussian elimination with partial
// pivoting.
func uslSolve3(a [3][3]float64, b [3]float64) ([3]float64, bool) {
	for c := 0; c < 3; c++ {
		piv := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		if a[piv][c] == 0 || math.IsNaN(a[piv][c]) {
			return b, false
		}
		a[c], a[piv] = a[piv], a[c]
		b[c], b[piv] = b[piv], b[c]
		for r := c + 1; r < 3; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < 3; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	var out [3]float64
	for r := 2; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < 3; k++ {
			s -= a[r][k] * out[k]
		}
		out[r] = s / a[r][r]
	}
	return out, true
}
