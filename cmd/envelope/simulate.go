package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// simulateCommand adds `envelope simulate`.
func (c *cli) simulateCommand(app *kingpin.Application) {
	cmd := app.Command("simulate", "Write a k6-shaped NDJSON run (--out json shape) consistent with an envelope, optionally with an injected regression.")
	envPath := cmd.Flag("envelope", "Envelope file (YAML or JSON).").Required().String()
	dur := cmd.Flag("duration", "Length of the simulated run.").Default("6m").Duration()
	seed := cmd.Flag("seed", "Random seed; the same seed gives the same file.").Default("1").Uint64()
	lat := cmd.Flag("latency-factor", "ENDPOINT=FACTOR: multiply an endpoint's latencies (* for all); repeatable.").Strings()
	errRate := cmd.Flag("error-rate", "Share of requests that fail (status 503).").Default("0").Float64()
	tf := cmd.Flag("throughput-factor", "Multiply the request and iteration rates.").Default("1").Float64()
	testid := cmd.Flag("testid", "testid tag of every point (default simulated-SEED).").String()
	variance := cmd.Flag("run-variance", "Run-level effect drawn from the seed on top of sampling: none, or real (the run-to-run variance of real runs: aggregate latency level, each endpoint's level, throughput).").Default("none").Enum("none", "real")
	out := cmd.Flag("out", "File to write; .gz compresses.").Required().String()
	cmd.Action(c.Action(func() error {
		env, err := envelope.ReadFile(*envPath)
		if err != nil {
			return err
		}
		o := simulate.Options{Duration: *dur, Seed: *seed, ErrorRate: *errRate, ThroughputFactor: *tf, TestID: *testid, LatencyFactor: map[string]float64{}}
		if *variance == "real" {
			o.Variance = simulate.RealVariance()
		}
		for _, s := range *lat {
			// The factor follows the last '=': endpoint names may hold '='.
			i := strings.LastIndex(s, "=")
			if i <= 0 {
				return fmt.Errorf("--latency-factor %q: want ENDPOINT=FACTOR", s)
			}
			k := s[:i]
			f, perr := strconv.ParseFloat(s[i+1:], 64)
			if perr != nil {
				return fmt.Errorf("--latency-factor %q: want ENDPOINT=FACTOR", s)
			}
			o.LatencyFactor[k] = f
		}
		if err := simulate.WriteFile(*out, env, o); err != nil {
			return err
		}
		c.Println(*out)
		return nil
	}))
}
