package main

import "github.com/envelope-dev/envelope/internal/changepoint"

// seriesName names a series as history show takes it.
func seriesName(endpoint, figure string) string {
	return changepoint.Key{Figure: figure, Endpoint: endpoint}.String()
}
