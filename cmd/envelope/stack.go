package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/otlp"
	"github.com/envelope-dev/envelope/internal/rules"
	"github.com/envelope-dev/envelope/internal/simulate"
	"github.com/envelope-dev/envelope/internal/stack"
)

// stackGRPCAddr is the stack exporter's default OTLP/gRPC address: the
// OTLP/gRPC port on loopback.
const stackGRPCAddr = "127.0.0.1:4317"

// stackK6Script is the script the printed k6 commands run.
const stackK6Script = "script.js"

// stackCommand adds `envelope stack`: the compose stack on loopback
// without containers.
func (c *cli) stackCommand(app *kingpin.Application) {
	cmd := app.Command("stack", "Run the exporter, Prometheus (with the envelope's rules) and Alertmanager on loopback, wired as the compose stack, replaying a simulated run of the demo envelope live; the exporter also takes k6's OTLP pushes over HTTP and gRPC. Prints the URLs and the k6 commands, and runs until interrupted.")
	dir := cmd.Flag("dir", "Folder for the configs, rules, simulated run, TSDB and logs (default: a new temporary folder, removed on exit).").Default("").String()
	envFile := cmd.Flag("envelope", "Envelope file to serve and derive the rules from (default: the embedded demo envelope).").Default("").String()
	results := cmd.Flag("k6.results", "k6 NDJSON result files to replay live instead of a simulated run; repeatable.").Strings()
	follow := cmd.Flag("k6.json", "k6 NDJSON output to follow as it grows, as `exporter serve` does.").Default("").String()
	speed := cmd.Flag("replay.speed", "Replay speed: 2 replays a 6-minute run in 3 minutes.").Default("1").Float64()
	loop := cmd.Flag("replay.loop", "Start the replay over when it ends.").Default("true").Bool()
	latency := cmd.Flag("simulate.latency-factor", "Inject a latency regression into the simulated run: ENDPOINT=FACTOR (* for every endpoint); repeatable.").Strings()
	errRate := cmd.Flag("simulate.error-rate", "Share of simulated requests that fail.").Default("0").Float64()
	seed := cmd.Flag("simulate.seed", "Seed of the simulated run.").Default("1").Uint64()
	promPath := cmd.Flag("prometheus.path", "Prometheus binary (default: prometheus on $PATH, else the Prometheus of the module's tool directive, built without the cloud service discovery the stack does not use).").Default("").String()
	amPath := cmd.Flag("alertmanager.path", "Alertmanager binary (default: alertmanager on $PATH, else the source tree's `go tool alertmanager` in tools/alertmanager; without one the stack runs without Alertmanager).").Default("").String()
	addr := cmd.Flag("web.listen-address", "Exporter address.").Default("127.0.0.1:" + exporter.DefaultPort).String()
	grpcAddr := cmd.Flag("otlp.grpc-listen-address", "Exporter's OTLP/gRPC address, k6's default OTLP protocol (OTLP/HTTP is served on the exporter address); empty = off.").Default(stackGRPCAddr).String()
	promAddr := cmd.Flag("prometheus.listen-address", "Prometheus address.").Default("127.0.0.1:9090").String()
	amAddr := cmd.Flag("alertmanager.listen-address", "Alertmanager address.").Default("127.0.0.1:9093").String()

	cmd.Action(c.Action(func() error {
		log := c.Logger()
		ctx, stop := c.SignalContext()
		defer stop()

		env, err := stackEnvelope(*envFile)
		if err != nil {
			return err
		}
		factors, err := parseFactors(*latency)
		if err != nil {
			return err
		}
		work := *dir
		if work == "" {
			if work, err = os.MkdirTemp("", "envelope-stack-"); err != nil {
				return err
			}
			defer func() {
				if err := os.RemoveAll(work); err != nil {
					log.Warn("temporary folder left behind", "dir", work, "err", err)
				}
			}()
		} else if err := os.MkdirAll(work, 0o755); err != nil {
			return err
		}
		work, _ = filepath.Abs(work)

		ruleFile, _, err := rules.Generate(env, rules.DefaultOptions())
		if err != nil {
			return fmt.Errorf("rules: %w", err)
		}
		ruleBytes, err := rules.Marshal(env, ruleFile)
		if err != nil {
			return err
		}

		promBin, err := stack.Locate(ctx, "prometheus", *promPath)
		if err != nil {
			return err
		}
		amBin, err := stack.Locate(ctx, "alertmanager", *amPath)
		if err != nil {
			if *amPath != "" {
				return err
			}
			amBin = ""
			c.Println("alertmanager: not found, running without it (alerts still show in Prometheus); pass --alertmanager.path to add it")
		}

		replay := *results
		if len(replay) == 0 && *follow == "" {
			run := filepath.Join(work, "simulated-run.ndjson.gz")
			c.Printf("simulating a 6-minute run of envelope %q into %s\n", env.Name, run)
			if err := simulate.WriteFile(run, env, simulate.Options{
				Duration: 6 * time.Minute, Seed: *seed, TestID: "stack-demo",
				LatencyFactor: factors, ErrorRate: *errRate, ThroughputFactor: 1,
			}); err != nil {
				return fmt.Errorf("simulate: %w", err)
			}
			replay = []string{run}
		}

		cfg := exporter.DefaultConfig()
		cfg.Envelope, cfg.Logger = env, log
		srv, err := exporter.New(cfg)
		if err != nil {
			return err
		}
		st, err := stack.Start(ctx, stack.Options{
			Dir:              work,
			Exporters:        []stack.Target{{Server: srv, Addr: *addr, GRPCAddr: *grpcAddr}},
			PrometheusBin:    promBin,
			PrometheusAddr:   *promAddr,
			AlertmanagerBin:  amBin,
			AlertmanagerAddr: *amAddr,
			Rules:            map[string][]byte{rules.RulesFile: ruleBytes},
			Logger:           log,
		})
		if err != nil {
			return err
		}
		// Interrupted, the stack is closed below and its error returned;
		// on the other paths the command already fails.
		defer func() { _ = st.Close() }()

		c.Printf("exporter:     %s/metrics\n", st.ExporterURLs[0])
		c.Printf("k6, OTLP/HTTP: %s\n", otlp.K6Command(false, strings.TrimPrefix(st.ExporterURLs[0], "http://"), stackK6Script))
		if g := st.OTLPGRPCAddrs[0]; g != "" {
			c.Printf("k6, OTLP/gRPC: %s\n", otlp.K6Command(true, g, stackK6Script))
		}
		c.Printf("prometheus:   %s  %s\n", st.PrometheusURL, prometheusLinks(ctx, st.PrometheusURL))
		if st.AlertmanagerURL != "" {
			c.Printf("alertmanager: %s\n", st.AlertmanagerURL)
		}
		c.Printf("folder:       %s (configs and logs)\nCtrl-C to stop.\n", work)

		errc := make(chan error, len(replay)+1)
		for _, f := range replay {
			go func() {
				n, err := stack.Replay(ctx, srv, f, *speed, *loop)
				log.Info("replay ended", "file", f, "points", n, "err", err)
				if err != nil {
					errc <- err
				}
			}()
		}
		if *follow != "" {
			go func() {
				if err := srv.Follow(ctx, *follow); err != nil && !errors.Is(err, context.Canceled) {
					errc <- err
				}
			}()
		}
		select {
		case <-ctx.Done():
			c.Println("stopping")
			return st.Close()
		case <-st.Done():
			return fmt.Errorf("a stack process exited; see the logs in %s", work)
		case err := <-errc:
			return err
		}
	}))
}

func stackEnvelope(path string) (*envelope.Envelope, error) {
	if path != "" {
		return envelope.ReadFile(path)
	}
	return demo.Envelope()
}

// parseFactors reads ENDPOINT=FACTOR pairs.
func parseFactors(pairs []string) (map[string]float64, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]float64{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil || f <= 0 {
			return nil, fmt.Errorf("--simulate.latency-factor %q: want ENDPOINT=FACTOR with a positive factor", p)
		}
		out[k] = f
	}
	return out, nil
}

// prometheusLinks names where the rules and alerts can be seen. A
// Prometheus built with `go tool` (the module's tool directive) has no
// web UI assets: its /rules page answers 500, so the links go to the
// HTTP API instead of pages that fail in the browser.
func prometheusLinks(ctx context.Context, base string) string {
	ui := fmt.Sprintf("(rules: %[1]s/rules, alerts: %[1]s/alerts)", base)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/rules", nil)
	if err != nil {
		return ui
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ui
	}
	_ = resp.Body.Close() // only the status is read
	if resp.StatusCode == http.StatusOK {
		return ui
	}
	return fmt.Sprintf("(this Prometheus has no web UI; rules: %[1]s/api/v1/rules, alerts: %[1]s/api/v1/alerts)", base)
}
