package cloudwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
)

// MaxQueriesPerCall is GetMetricData's limit on queries per request.
const MaxQueriesPerCall = 500

// Config selects what is polled and how. The zero durations take the
// documented defaults (see docs/ecs.md, "CloudWatch timing").
type Config struct {
	Region            string
	Cluster           string   // short name or ARN; the ClusterName dimension is the short name
	Services          []string // ServiceName dimension values
	ContainerInsights bool     // also read ECS/ContainerInsights (paid, must be enabled on the cluster)
	Endpoint          string   // base endpoint override (VPC endpoint, tests); empty = AWS
	Period            time.Duration
	Delay             time.Duration // publication delay: newest period requested ends this long ago
	Window            time.Duration // how far back from the delayed end to look for the newest point
	Interval          time.Duration // time between polls
	SetTimestamps     bool          // expose samples with CloudWatch's timestamps
	MaxQueries        int           // queries per call, <= 500
	MaxAttempts       int           // attempts per call before the poll fails
	BackoffBase       time.Duration // first retry delay, doubled per attempt
	BackoffMax        time.Duration
}

// Defaults.
const (
	DefaultPeriod      = 60 * time.Second
	DefaultDelay       = 3 * time.Minute
	DefaultWindow      = 10 * time.Minute
	DefaultInterval    = 60 * time.Second
	DefaultMaxAttempts = 4
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 30 * time.Second
)

// Enabled is true when a cluster and at least one service are configured.
func (c Config) Enabled() bool { return c.Cluster != "" && len(c.Services) > 0 }

func (c Config) withDefaults() Config {
	if c.Period <= 0 {
		c.Period = DefaultPeriod
	}
	// CloudWatch periods are whole seconds; ECS metrics are 60s resolution.
	c.Period = c.Period.Truncate(time.Second)
	if c.Period < time.Second {
		c.Period = DefaultPeriod
	}
	if c.Delay < 0 {
		c.Delay = 0
	} else if c.Delay == 0 {
		c.Delay = DefaultDelay
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Window < c.Period {
		c.Window = c.Period
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.MaxQueries <= 0 || c.MaxQueries > MaxQueriesPerCall {
		c.MaxQueries = MaxQueriesPerCall
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	return c
}

// Validate reports configuration errors by flag name.
func (c Config) Validate() error {
	if c.Cluster == "" && len(c.Services) == 0 {
		return nil // off
	}
	if c.Cluster == "" {
		return errors.New("--cloudwatch.service needs --cloudwatch.cluster")
	}
	if len(c.Services) == 0 {
		return errors.New("--cloudwatch.cluster needs at least one --cloudwatch.service")
	}
	for _, s := range c.Services {
		if strings.TrimSpace(s) == "" {
			return errors.New("--cloudwatch.service: empty service name")
		}
	}
	return nil
}

// API is the one CloudWatch call used; *cloudwatch.Client satisfies it.
type API interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// NewAPI builds a CloudWatch client from the default credential chain
// (environment, shared config, ECS task role, EC2 instance role). The
// SDK's own retries are off: the poller retries with its own backoff so
// every failure is counted.
func NewAPI(ctx context.Context, cfg Config) (*cloudwatch.Client, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRetryMaxAttempts(1)}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("cloudwatch: loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("cloudwatch: no region: set --cloudwatch.region or AWS_REGION")
	}
	return cloudwatch.NewFromConfig(awsCfg, func(o *cloudwatch.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}), nil
}

// point is the newest datapoint of one query.
type point struct {
	value float64
	ts    time.Time
}

// state is what the collector serves; replaced as a whole after a poll.
type state struct {
	points       map[string]point // by query id
	up           bool
	polled       bool
	lastSuccess  time.Time
	pollDuration time.Duration
	requests     map[string]float64 // outcome -> count
	errors       map[string]float64 // reason -> count
	metricsReq   float64
}

// Poller polls CloudWatch and keeps the last values.
type Poller struct {
	cfg     Config
	cluster string
	api     API
	logger  *slog.Logger
	queries []query

	// now and sleep are replaced in tests.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	mu sync.Mutex
	st state
}

// NewPoller returns a poller; call Run to start polling.
func NewPoller(cfg Config, api API, logger *slog.Logger) (*Poller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("cloudwatch: no cluster and service configured")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	return &Poller{
		cfg:     cfg,
		cluster: shortCluster(cfg.Cluster),
		api:     api,
		logger:  logger,
		queries: buildQueries(cfg.Services, cfg.ContainerInsights),
		now:     time.Now,
		sleep:   sleepCtx,
		st: state{points: map[string]point{}, requests: map[string]float64{"success": 0, "error": 0},
			errors: map[string]float64{"throttled": 0, "credentials": 0, "other": 0}},
	}, nil
}

func shortCluster(c string) string {
	if i := strings.LastIndex(c, ":cluster/"); i >= 0 {
		return c[i+len(":cluster/"):]
	}
	return c
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Run polls now and then every Interval until ctx is done.
func (p *Poller) Run(ctx context.Context) {
	for {
		if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.logger.Warn("CloudWatch poll failed; serving the last values", "err", err)
		}
		if p.sleep(ctx, p.cfg.Interval) != nil {
			return
		}
	}
}

// timeRange is the [start, end) requested: end is now minus the
// publication delay, aligned down to a period boundary so each period is
// complete; start is Window earlier.
func (p *Poller) timeRange() (time.Time, time.Time) {
	end := p.now().UTC().Add(-p.cfg.Delay).Truncate(p.cfg.Period)
	return end.Add(-p.cfg.Window), end
}

// Poll runs one round of GetMetricData calls. Values from successful
// batches replace the old ones; a failed batch keeps its last values and
// marks the poll down.
func (p *Poller) Poll(ctx context.Context) error {
	began := time.Now()
	start, end := p.timeRange()
	fresh := map[string]point{}
	var errs []error
	for _, b := range batches(p.queries, p.cfg.MaxQueries) {
		if err := p.fetchBatch(ctx, b, start, end, fresh); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)

	p.mu.Lock()
	defer p.mu.Unlock()
	for id, pt := range fresh {
		p.st.points[id] = pt
	}
	p.st.polled = true
	p.st.up = err == nil
	p.st.pollDuration = time.Since(began)
	if err == nil {
		p.st.lastSuccess = p.now()
	}
	return err
}

// fetchBatch runs one batch, following NextToken, retrying each call.
func (p *Poller) fetchBatch(ctx context.Context, b []query, start, end time.Time, into map[string]point) error {
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(start),
		EndTime:   aws.Time(end),
		ScanBy:    types.ScanByTimestampDescending,
	}
	period := int32(p.cfg.Period / time.Second)
	for _, q := range b {
		in.MetricDataQueries = append(in.MetricDataQueries, q.toAPI(p.cluster, period))
	}
	for {
		out, err := p.call(ctx, in)
		if err != nil {
			return err
		}
		for _, r := range out.MetricDataResults {
			id := aws.ToString(r.Id)
			if len(r.Values) == 0 || len(r.Timestamps) != len(r.Values) {
				continue
			}
			// Pick the newest point whatever order the page uses.
			best := 0
			for i := range r.Timestamps {
				if r.Timestamps[i].After(r.Timestamps[best]) {
					best = i
				}
			}
			if cur, ok := into[id]; ok && !r.Timestamps[best].After(cur.ts) {
				continue
			}
			into[id] = point{value: r.Values[best], ts: r.Timestamps[best]}
		}
		if out.NextToken == nil || *out.NextToken == "" {
			return nil
		}
		in.NextToken = out.NextToken
	}
}

// call makes one GetMetricData request with retries and exponential
// backoff with jitter, counting each outcome.
func (p *Poller) call(ctx context.Context, in *cloudwatch.GetMetricDataInput) (*cloudwatch.GetMetricDataOutput, error) {
	var lastErr error
	for attempt := 0; attempt < p.cfg.MaxAttempts; attempt++ {
		if attempt > 0 {
			d := min(p.cfg.BackoffBase<<(attempt-1), p.cfg.BackoffMax)
			d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
			if err := p.sleep(ctx, d); err != nil {
				return nil, err
			}
		}
		p.count(func(s *state) { s.metricsReq += float64(len(in.MetricDataQueries)) })
		out, err := p.api.GetMetricData(ctx, in)
		if err == nil {
			p.count(func(s *state) { s.requests["success"]++ })
			return out, nil
		}
		reason := Classify(err)
		p.count(func(s *state) { s.requests["error"]++; s.errors[reason]++ })
		lastErr = fmt.Errorf("GetMetricData (%s, attempt %d of %d): %w", reason, attempt+1, p.cfg.MaxAttempts, err)
		p.logger.Debug("CloudWatch call failed", "reason", reason, "attempt", attempt+1, "err", err)
		if ctx.Err() != nil {
			return nil, lastErr
		}
	}
	return nil, lastErr
}

func (p *Poller) count(f func(*state)) {
	p.mu.Lock()
	f(&p.st)
	p.mu.Unlock()
}

// Classify names why a call failed: "throttled", "credentials" or
// "other".
func Classify(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
			"TooManyRequestsException", "LimitExceededException", "RequestThrottled", "SlowDown":
			return "throttled"
		case "ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException",
			"AccessDenied", "AccessDeniedException", "AuthFailure", "SignatureDoesNotMatch",
			"MissingAuthenticationToken", "IncompleteSignature", "InvalidSignatureException":
			return "credentials"
		}
	}
	if strings.Contains(err.Error(), "failed to retrieve credentials") || strings.Contains(err.Error(), "no EC2 IMDS role found") {
		return "credentials"
	}
	return "other"
}

// snapshot copies the state for a scrape.
func (p *Poller) snapshot() state {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.points = make(map[string]point, len(p.st.points))
	for k, v := range p.st.points {
		s.points[k] = v
	}
	s.requests = map[string]float64{}
	for k, v := range p.st.requests {
		s.requests[k] = v
	}
	s.errors = map[string]float64{}
	for k, v := range p.st.errors {
		s.errors[k] = v
	}
	return s
}
