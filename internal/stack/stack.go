// Package stack runs the compose stack's wiring on one machine without
// containers: one or more exporters served in-process (each taking OTLP
// over HTTP, and over gRPC when given a gRPC address), Prometheus 3
// scraping them (native and classic histograms) and evaluating rule
// files, and optionally Alertmanager receiving the alerts, all on
// loopback. `envelope stack` uses it to show the whole flow in a browser;
// tests use it to put real Prometheus evaluation behind an assertion.
//
//	st, err := stack.Start(ctx, stack.Options{
//		Dir:           dir,
//		Exporters:     []stack.Target{{Server: srv}},
//		PrometheusBin: bin, // stack.Locate(ctx, "prometheus", "")
//		Rules:         map[string][]byte{"envelope.rules.yaml": rules},
//	})
//	defer st.Close()
//	samples, err := stack.Query(ctx, st.PrometheusURL, "up", time.Time{})
//
// Prometheus and Alertmanager run as child processes in their own process
// groups, with their logs in Dir; Close stops them and the exporters.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/envelope-dev/envelope/internal/exporter"
)

// Target is one in-process exporter scraped by the stack's Prometheus.
type Target struct {
	Server *exporter.Server
	Addr   string            // listen address; "" = a free loopback port
	Labels map[string]string // target labels Prometheus adds to its series
	// GRPCAddr is the OTLP/gRPC listen address (k6's default OTLP
	// protocol; OTLP/HTTP is always served on Addr); "" = no gRPC,
	// "127.0.0.1:0" = a free loopback port.
	GRPCAddr string
}

// Options configure Start.
type Options struct {
	// Dir holds prometheus.yml, rules/, the TSDB, alertmanager.yml and the
	// logs. It must exist.
	Dir string

	Exporters []Target

	PrometheusBin  string // required; see Locate
	PrometheusAddr string // "" = a free loopback port

	AlertmanagerBin  string // "" = run without Alertmanager
	AlertmanagerAddr string // "" = a free loopback port

	// Rules are rule files (name -> content) written into Dir/rules and
	// loaded by Prometheus.
	Rules map[string][]byte

	ScrapeInterval     time.Duration // default 5s
	EvaluationInterval time.Duration // default 5s

	// ReadyTimeout bounds the wait for each process; default 2m (the
	// first `go tool` build of Prometheus is slow).
	ReadyTimeout time.Duration

	Logger *slog.Logger
}

// Stack is a running stack.
type Stack struct {
	ExporterURLs []string
	// OTLPGRPCAddrs are the exporters' OTLP/gRPC addresses (host:port),
	// in the order of Options.Exporters; "" for one without gRPC.
	OTLPGRPCAddrs   []string
	PrometheusURL   string
	AlertmanagerURL string // "" without Alertmanager
	Dir             string

	prom, am *Process
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errs     chan error
	once     sync.Once
}

// Start starts the exporters, Alertmanager (when configured) and
// Prometheus, and returns once every one answers its readiness endpoint.
// On error, whatever was started is stopped.
func Start(ctx context.Context, o Options) (*Stack, error) {
	st, err := start(ctx, o)
	if err != nil {
		if st != nil {
			_ = st.Close() // best-effort cleanup; the start error is the one to report
		}
		return nil, err
	}
	return st, nil
}

func start(ctx context.Context, o Options) (st *Stack, err error) {
	if o.PrometheusBin == "" {
		return st, errors.New("stack: no Prometheus binary")
	}
	if len(o.Exporters) == 0 {
		return st, errors.New("stack: no exporter")
	}
	if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
		return st, fmt.Errorf("stack: folder %q: %v", o.Dir, err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	dir, _ := filepath.Abs(o.Dir)
	runCtx, cancel := context.WithCancel(context.Background())
	st = &Stack{Dir: dir, cancel: cancel, errs: make(chan error, 2*len(o.Exporters))}

	// Exporters first, so Prometheus finds them up on its first scrape.
	exporterJob, err := st.serveExporters(runCtx, o.Exporters)
	if err != nil {
		return st, err
	}
	ruleFiles, err := writeRules(dir, o.Rules)
	if err != nil {
		return st, err
	}

	readyCtx, readyCancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer readyCancel()

	cfg := PrometheusConfig{
		ScrapeInterval:     o.ScrapeInterval,
		EvaluationInterval: o.EvaluationInterval,
		RuleFiles:          ruleFiles,
	}
	if o.AlertmanagerBin != "" {
		if err := st.startAlertmanager(readyCtx, o, &cfg); err != nil {
			return st, err
		}
	}
	cfg.Jobs = append(cfg.Jobs, exporterJob)
	if err := st.startPrometheus(readyCtx, o, cfg); err != nil {
		return st, err
	}
	o.Logger.Info("stack started", "prometheus", st.PrometheusURL, "alertmanager", st.AlertmanagerURL, "exporters", st.ExporterURLs, "otlp_grpc", st.OTLPGRPCAddrs)
	return st, nil
}

// serveExporters serves each exporter on its own listener until runCtx
// ends, and returns the scrape job that finds them.
func (st *Stack) serveExporters(runCtx context.Context, targets []Target) (Job, error) {
	exporterJob := Job{Name: ExporterJob}
	group := map[string]int{} // label set -> index in exporterJob.Groups
	for i, t := range targets {
		addr := t.Addr
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return exporterJob, fmt.Errorf("stack: exporter %d: %w", i, err)
		}
		a := l.Addr().String()
		st.ExporterURLs = append(st.ExporterURLs, "http://"+a)
		st.wg.Add(1)
		go func(srv *exporter.Server) {
			defer st.wg.Done()
			if err := srv.Serve(runCtx, l); err != nil {
				st.errs <- err
			}
		}(t.Server)
		grpcAddr, err := st.serveGRPC(runCtx, i, t)
		if err != nil {
			return exporterJob, err
		}
		st.OTLPGRPCAddrs = append(st.OTLPGRPCAddrs, grpcAddr)
		// One job (the name the rules select on), one static config per
		// distinct label set.
		key := fmt.Sprint(t.Labels)
		gi, ok := group[key]
		if !ok {
			gi = len(exporterJob.Groups)
			group[key] = gi
			exporterJob.Groups = append(exporterJob.Groups, TargetGroup{Labels: t.Labels})
		}
		exporterJob.Groups[gi].Targets = append(exporterJob.Groups[gi].Targets, a)
	}
	return exporterJob, nil
}

// serveGRPC serves the OTLP/gRPC receiver of exporter i on t.GRPCAddr
// until runCtx ends, and returns its address ("" when t has none).
func (st *Stack) serveGRPC(runCtx context.Context, i int, t Target) (string, error) {
	if t.GRPCAddr == "" {
		return "", nil
	}
	l, err := net.Listen("tcp", t.GRPCAddr)
	if err != nil {
		return "", fmt.Errorf("stack: exporter %d: OTLP/gRPC: %w", i, err)
	}
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		if err := t.Server.ServeGRPC(runCtx, l); err != nil {
			st.errs <- err
		}
	}()
	return l.Addr().String(), nil
}

// writeRules writes the rule files under dir/rules, sorted by name, and
// returns their paths relative to dir.
func writeRules(dir string, files map[string][]byte) ([]string, error) {
	ruleDir := filepath.Join(dir, "rules")
	if err := os.MkdirAll(ruleDir, 0o755); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var ruleFiles []string
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(ruleDir, n), files[n], 0o644); err != nil {
			return nil, err
		}
		ruleFiles = append(ruleFiles, filepath.Join("rules", n))
	}
	return ruleFiles, nil
}

// startAlertmanager starts Alertmanager, waits until it is ready and
// points cfg at it.
func (st *Stack) startAlertmanager(readyCtx context.Context, o Options, cfg *PrometheusConfig) error {
	dir := st.Dir
	addr, err := listenAddr(o.AlertmanagerAddr)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfgPath, []byte(AlertmanagerConfig), 0o644); err != nil {
		return err
	}
	amData := filepath.Join(dir, "alertmanager-data")
	// Cluster mode off: a lone Alertmanager needs no gossip port.
	st.am, err = StartProcess("alertmanager", o.AlertmanagerBin, []string{
		"--config.file=" + cfgPath,
		"--storage.path=" + amData,
		"--web.listen-address=" + addr,
		"--cluster.listen-address=",
	}, dir, filepath.Join(dir, "alertmanager.log"), "http://"+addr)
	if err != nil {
		return err
	}
	if err := st.am.WaitReady(readyCtx, st.am.URL+"/-/ready"); err != nil {
		return err
	}
	st.AlertmanagerURL = st.am.URL
	cfg.Alertmanagers = []string{addr}
	return nil
}

// startPrometheus writes Prometheus's configuration (cfg plus its own and
// Alertmanager's scrape jobs), starts it and waits until it is ready.
func (st *Stack) startPrometheus(readyCtx context.Context, o Options, cfg PrometheusConfig) error {
	dir := st.Dir
	addr, err := listenAddr(o.PrometheusAddr)
	if err != nil {
		return err
	}
	cfg.Jobs = append(cfg.Jobs, Job{Name: "prometheus", Groups: []TargetGroup{{Targets: []string{addr}}}})
	if cfg.Alertmanagers != nil {
		cfg.Jobs = append(cfg.Jobs, Job{Name: "alertmanager", Groups: []TargetGroup{{Targets: cfg.Alertmanagers}}})
	}
	y, err := cfg.YAML()
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, y, 0o644); err != nil {
		return err
	}
	st.prom, err = StartProcess("prometheus", o.PrometheusBin, []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
		"--web.listen-address=" + addr,
		"--web.enable-lifecycle",
	}, dir, filepath.Join(dir, "prometheus.log"), "http://"+addr)
	if err != nil {
		return err
	}
	if err := st.prom.WaitReady(readyCtx, st.prom.URL+"/-/ready"); err != nil {
		return err
	}
	st.PrometheusURL = st.prom.URL
	return nil
}

// listenAddr returns addr, or a free loopback address when empty.
func listenAddr(addr string) (string, error) {
	if addr != "" {
		return addr, nil
	}
	return FreeAddr()
}

// Done is closed when Prometheus or Alertmanager exits on its own.
func (s *Stack) Done() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		if s.am != nil {
			select {
			case <-s.prom.Done():
			case <-s.am.Done():
			}
		} else {
			<-s.prom.Done()
		}
		close(ch)
	}()
	return ch
}

// Close stops Prometheus, Alertmanager and the exporters, in that order
// (nothing scrapes a stopped exporter). It is safe to call twice.
func (s *Stack) Close() error {
	var errs []error
	s.once.Do(func() {
		for _, p := range []*Process{s.prom, s.am} {
			if p != nil {
				if err := p.Stop(10 * time.Second); err != nil {
					errs = append(errs, err)
				}
			}
		}
		s.cancel()
		s.wg.Wait()
		close(s.errs)
		for err := range s.errs {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}
