package rules

import "github.com/envelope-dev/envelope/internal/envelope"

// MedianQuantile is the quantile of the centre test that complements the
// p95 and p99 band tests.
//
// Why a median test: a "pQ above X" alert counts requests slower than X
// and compares the count with a binomial bound. How fast it sees a shift
// depends on how much one request tells about it. For a latency shift
// by a factor (the whole distribution moving, as a slower dependency
// moves it) the indicator "slower than the q quantile" carries Fisher
// information φ(z_q)²/(q(1−q)) per request, in units of the log-latency
// spread: 0.64 at the median, 0.22 at p95, 0.07 at p99. So the median
// test needs about a third of the requests the p95 test needs for the
// same shift, which is what a thin endpoint lacks: at 1.34 req/s a +15%
// shift of auth_register puts 10% of its requests above the p95
// threshold, a margin over 5% that needs about 550 requests (7 minutes)
// for 95% power at the false-alarm budget, while 66% of them cross the
// median threshold, a margin over one half that 220 requests show. The
// median band is also usually the tightest band of an envelope
// (run-to-run spread is smallest at the centre), so the tolerance above
// it is the nearest to a typical run. The test keeps the policy: it fires only
// when more than half of the requests are slower than the top of the
// median band plus the latency tolerance, beyond the binomial margin.
const MedianQuantile = 0.5

// medianBound is the centre test of band, or false when the envelope
// has no median band there.
func medianBound(band envelope.Band, rise, n, z float64) (LatencyBound, bool) {
	if band.Max <= 0 {
		return LatencyBound{}, false
	}
	return latencyBound(MedianQuantile, band, rise, n, z), true
}
