package runstore

import (
	"fmt"
	"slices"
	"strings"
)

// Figure names of a run: the envelope's per-run values.
const (
	FigRPS             = "rps"
	FigIterationsPerS  = "iterations_per_s"
	FigRequestsPerIter = "requests_per_iteration"
	FigErrorRate       = "error_rate"
	FigAvg             = "avg"
	FigMedian          = "median"
	FigP95             = "p95"
	FigP99             = "p99"
	FigMax             = "max"
)

// figureNames are every figure a run can hold, aggregate ones first.
var figureNames = [...]string{FigRPS, FigIterationsPerS, FigRequestsPerIter, FigErrorRate, FigAvg, FigMedian, FigP95, FigP99, FigMax}

// endpointFigures are the figures an endpoint has.
var endpointFigures = map[string]bool{FigAvg: true, FigMedian: true, FigP95: true, FigP99: true, FigMax: true}

// ParseFigure splits a figure's name as the history commands take it,
// "p95" or "auth_login.p95", into its endpoint ("" for an aggregate
// figure) and the figure.
func ParseFigure(key string) (endpoint, figure string, err error) {
	endpoint, figure = "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		endpoint, figure = key[:i], key[i+1:]
	}
	if !slices.Contains(figureNames[:], figure) {
		return "", "", fmt.Errorf("figure %q: want one of %s, prefixed with an endpoint for an endpoint's (auth_login.p95)", key, strings.Join(figureNames[:], ", "))
	}
	if endpoint != "" && !endpointFigures[figure] {
		return "", "", fmt.Errorf("figure %q: an endpoint has only avg, median, p95, p99 and max", key)
	}
	if i := strings.LastIndex(key, "."); i == 0 {
		return "", "", fmt.Errorf("figure %q: empty endpoint name", key)
	}
	return endpoint, figure, nil
}

// Unit is the unit a figure is in.
func Unit(figure string) string {
	switch figure {
	case FigRPS:
		return "req/s"
	case FigIterationsPerS:
		return "iter/s"
	case FigRequestsPerIter:
		return "req/iter"
	case FigErrorRate:
		return "ratio"
	}
	return "ms"
}
