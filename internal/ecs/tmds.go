// Package ecs reads the ECS task metadata endpoint version 4 (TMDS v4)
// from a sidecar, exposes its task and container figures as Prometheus
// series compatible with prometheus-community/ecs_exporter, and derives
// an envelope's ECS operating point from recorded snapshots.
package ecs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// EnvMetadataURI is the variable ECS injects into every container
// (Fargate platform >= 1.4.0, EC2 agent >= 1.39.0).
const EnvMetadataURI = "ECS_CONTAINER_METADATA_URI_V4"

// maxBody bounds a TMDS response; real /task/stats bodies are a few KiB per
// container.
const maxBody = 16 << 20

// TaskMetadata is the subset of GET ${URI}/task this package uses. Fields
// absent on one launch type stay zero: ServiceName is EC2-only, Limits is
// optional on EC2, EphemeralStorageMetrics is Fargate-only.
type TaskMetadata struct {
	Cluster                 string              `json:"Cluster"`
	TaskARN                 string              `json:"TaskARN"`
	Family                  string              `json:"Family"`
	Revision                string              `json:"Revision"`
	DesiredStatus           string              `json:"DesiredStatus"`
	KnownStatus             string              `json:"KnownStatus"`
	Limits                  *TaskLimits         `json:"Limits,omitempty"`
	PullStartedAt           *time.Time          `json:"PullStartedAt,omitempty"`
	PullStoppedAt           *time.Time          `json:"PullStoppedAt,omitempty"`
	AvailabilityZone        string              `json:"AvailabilityZone"`
	LaunchType              string              `json:"LaunchType"`
	ServiceName             string              `json:"ServiceName,omitempty"`
	Containers              []ContainerMetadata `json:"Containers"`
	EphemeralStorageMetrics *EphemeralStorage   `json:"EphemeralStorageMetrics,omitempty"`
}

// TaskLimits are task-level limits: CPU in vCPUs, Memory in MiB.
type TaskLimits struct {
	CPU    *float64 `json:"CPU,omitempty"`
	Memory *float64 `json:"Memory,omitempty"`
}

// ContainerLimits are container-level limits: CPU in CPU units (1024 per
// vCPU), Memory in MiB.
type ContainerLimits struct {
	CPU    *float64 `json:"CPU,omitempty"`
	Memory *float64 `json:"Memory,omitempty"`
}

// EphemeralStorage is Fargate's task storage, in MiB.
type EphemeralStorage struct {
	Utilized float64 `json:"Utilized"`
	Reserved float64 `json:"Reserved"`
}

// ContainerMetadata is one entry of TaskMetadata.Containers.
type ContainerMetadata struct {
	DockerID      string           `json:"DockerId"`
	Name          string           `json:"Name"`
	Image         string           `json:"Image"`
	DesiredStatus string           `json:"DesiredStatus"`
	KnownStatus   string           `json:"KnownStatus"`
	ExitCode      *int             `json:"ExitCode,omitempty"`
	Limits        *ContainerLimits `json:"Limits,omitempty"`
	RestartCount  *int             `json:"RestartCount,omitempty"`
	Networks      []Network        `json:"Networks,omitempty"`
}

// Network is one container network attachment.
type Network struct {
	NetworkMode string `json:"NetworkMode"`
}

// ContainerStats is the docker stats document TMDS returns per container
// (Engine API v1.30 shape), keeping the fields this package reads.
type ContainerStats struct {
	Read        time.Time                `json:"read"`
	PreRead     time.Time                `json:"preread"`
	Name        string                   `json:"name"`
	ID          string                   `json:"id"`
	PidsStats   PidsStats                `json:"pids_stats"`
	CPUStats    CPUStats                 `json:"cpu_stats"`
	PreCPUStats CPUStats                 `json:"precpu_stats"`
	Memory      MemoryStats              `json:"memory_stats"`
	Blkio       BlkioStats               `json:"blkio_stats"`
	Networks    map[string]NetworkCounts `json:"networks,omitempty"`
}

// PidsStats is only filled under cgroup v2.
type PidsStats struct {
	Current *uint64 `json:"current,omitempty"`
}

// CPUStats holds cumulative nanoseconds.
type CPUStats struct {
	Usage struct {
		Total  uint64 `json:"total_usage"`
		Kernel uint64 `json:"usage_in_kernelmode"`
		User   uint64 `json:"usage_in_usermode"`
	} `json:"cpu_usage"`
	SystemUsage uint64 `json:"system_cpu_usage"`
	OnlineCPUs  uint32 `json:"online_cpus"`
}

// MemoryStats: Stats keys differ between cgroup v1 (cache,
// total_inactive_file) and v2 (file, inactive_file).
type MemoryStats struct {
	Usage uint64            `json:"usage"`
	Limit uint64            `json:"limit"`
	Stats map[string]uint64 `json:"stats,omitempty"`
}

// BlkioStats holds per-device counters; only io_service_bytes_recursive is
// read.
type BlkioStats struct {
	ServiceBytes []BlkioEntry `json:"io_service_bytes_recursive"`
}

// BlkioEntry is one device and operation.
type BlkioEntry struct {
	Major uint64 `json:"major"`
	Minor uint64 `json:"minor"`
	Op    string `json:"op"`
	Value uint64 `json:"value"`
}

// NetworkCounts are one interface's cumulative counters.
type NetworkCounts struct {
	RxBytes   uint64 `json:"rx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	RxErrors  uint64 `json:"rx_errors"`
	RxDropped uint64 `json:"rx_dropped"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxErrors  uint64 `json:"tx_errors"`
	TxDropped uint64 `json:"tx_dropped"`
}

// Empty reports whether s carries no sample: stopped containers map to
// null on Fargate and to {} on EC2.
func (s *ContainerStats) Empty() bool { return s == nil || s.Read.IsZero() }

// Client reads TMDS v4. The zero HTTP client is not used: requests carry
// the caller's context, and Timeout bounds each one.
type Client struct {
	base    string
	http    *http.Client
	timeout time.Duration
}

// NewClient returns a client for the endpoint (the value of
// ECS_CONTAINER_METADATA_URI_V4). timeout bounds each request; 0 means 5s.
func NewClient(endpoint string, timeout time.Duration) (*Client, error) {
	endpoint = strings.TrimRight(strings.TrimSpace(endpoint), "/")
	if endpoint == "" {
		return nil, errors.New("ecs: empty task metadata endpoint")
	}
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("ecs: task metadata endpoint %q: want an http:// URL", endpoint)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Client{base: endpoint, http: &http.Client{}, timeout: timeout}, nil
}

// Endpoint is the base URL the client reads.
func (c *Client) Endpoint() string { return c.base }

// Task reads ${URI}/task.
func (c *Client) Task(ctx context.Context) (*TaskMetadata, error) {
	var t TaskMetadata
	if err := c.get(ctx, "/task", &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TaskStats reads ${URI}/task/stats, keyed by DockerId.
func (c *Client) TaskStats(ctx context.Context) (map[string]*ContainerStats, error) {
	var s map[string]*ContainerStats
	if err := c.get(ctx, "/task/stats", &s); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *Client) get(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	url := c.base + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close() //nolint:errcheck // response body, only read
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("GET %s: reading body: %w", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, snippet(body))
	}
	return decodeJSON(url, body, v)
}

// decodeJSON decodes body into v and names the source, line and field on
// failure.
func decodeJSON(source string, body []byte, v any) error {
	return decodeAt(source, 0, body, v)
}

// decodeAt is decodeJSON for a body that starts at line first+1 of source
// (NDJSON files).
func decodeAt(source string, first int, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		var pe *time.ParseError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("%s: line %d: invalid JSON: %v", source, first+lineOf(body, se.Offset), se)
		case errors.As(err, &te):
			return fmt.Errorf("%s: line %d: field %s: cannot use JSON %s as %s", source, first+lineOf(body, te.Offset), te.Field, te.Value, te.Type)
		case errors.As(err, &pe):
			return fmt.Errorf("%s: line %d: bad timestamp %q: %v", source, first+1, pe.Value, err)
		default:
			return fmt.Errorf("%s: line %d: %w", source, first+1, err)
		}
	}
	return nil
}

func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return 1 + strings.Count(string(b[:off]), "\n")
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
