package k6

import "math"

// runStart is k6's test start as far as a point stream shows it: k6 samples
// vus once a second from the start, so the first vus sample less one second,
// unless a sample is earlier still.
func runStart(minT, vusT int64) int64 {
	if vusT != math.MaxInt64 && vusT-1e9 < minT {
		return vusT - 1e9
	}
	return minT
}
