// Package envelope is the root of the envelope module; its only content is
// the go:generate list, run in this order by `go generate ./...`: the demo
// envelope first, then everything generated from it.
package envelope
