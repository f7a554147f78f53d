package ecs

import (
	"strings"
)

const (
	nanoseconds = 1e-9    // TMDS CPU counters are nanoseconds
	mebibyte    = 1 << 20 // TMDS limits and Fargate storage are MiB
	cpuUnits    = 1024.0  // CPU units per vCPU
)

// unlimitedMemory is the smallest value treated as "no limit": Fargate
// reports 9223372036854771712 (page-aligned max int64) per container.
const unlimitedMemory = 1 << 62

// ClusterName returns the short cluster name whether TMDS gave the ARN
// (Fargate) or the short name (EC2).
func ClusterName(cluster string) string {
	if i := strings.LastIndex(cluster, ":cluster/"); i >= 0 {
		return cluster[i+len(":cluster/"):]
	}
	return cluster
}

// TaskID is the last path segment of the task ARN.
func TaskID(taskARN string) string {
	if i := strings.LastIndex(taskARN, "/"); i >= 0 {
		return taskARN[i+1:]
	}
	return taskARN
}

// TaskCPULimitVCPUs is the task CPU limit, ok=false when unset (EC2).
func (t *TaskMetadata) TaskCPULimitVCPUs() (float64, bool) {
	if t.Limits == nil || t.Limits.CPU == nil || *t.Limits.CPU <= 0 {
		return 0, false
	}
	return *t.Limits.CPU, true
}

// TaskMemoryLimitBytes is the task memory limit, ok=false when unset.
func (t *TaskMetadata) TaskMemoryLimitBytes() (float64, bool) {
	if t.Limits == nil || t.Limits.Memory == nil || *t.Limits.Memory <= 0 {
		return 0, false
	}
	return *t.Limits.Memory * mebibyte, true
}

// MemoryLimitBytes is the limit the container's cgroup enforces: the
// container's own Limits.Memory if set, else the task's, as ecs_exporter
// does. The docker-reported memory_stats.limit is used only when neither
// is set and it is a real value (not Fargate's "unlimited" 9.2e18).
func (t *TaskMetadata) MemoryLimitBytes(c *ContainerMetadata, s *ContainerStats) (float64, bool) {
	if c.Limits != nil && c.Limits.Memory != nil && *c.Limits.Memory > 0 {
		return *c.Limits.Memory * mebibyte, true
	}
	if v, ok := t.TaskMemoryLimitBytes(); ok {
		return v, true
	}
	if !s.Empty() && s.Memory.Limit > 0 && s.Memory.Limit < unlimitedMemory {
		return float64(s.Memory.Limit), true
	}
	return 0, false
}

// CgroupV2 reports whether the memory stats use cgroup v2 keys.
func (m *MemoryStats) CgroupV2() bool {
	_, hasCache := m.Stats["cache"]
	_, hasInactive := m.Stats["inactive_file"]
	return !hasCache && hasInactive
}

// WorkingSet is usage minus inactive file pages: inactive_file on cgroup
// v2, total_inactive_file on cgroup v1 (docker CLI >= 20.10, Kubernetes).
// It is clamped at 0.
func (m *MemoryStats) WorkingSet() uint64 {
	var inactive uint64
	if m.CgroupV2() {
		inactive = m.Stats["inactive_file"]
	} else if v, ok := m.Stats["total_inactive_file"]; ok {
		inactive = v
	} else {
		inactive = m.Stats["inactive_file"]
	}
	if inactive >= m.Usage {
		return 0
	}
	return m.Usage - inactive
}

// PageCache is cache on cgroup v1 and file on cgroup v2 (ecs_exporter
// reports 0 on v2 because it only reads cache).
func (m *MemoryStats) PageCache() uint64 {
	if v, ok := m.Stats["cache"]; ok {
		return v
	}
	return m.Stats["file"]
}

// BlkioBytes sums read and write bytes over devices. Operation names are
// Read/Write on cgroup v1 and read/write on v2, so they are matched
// case-insensitively.
func (b *BlkioStats) BlkioBytes() (read, write uint64) {
	for _, e := range b.ServiceBytes {
		switch {
		case strings.EqualFold(e.Op, "read"):
			read += e.Value
		case strings.EqualFold(e.Op, "write"):
			write += e.Value
		}
	}
	return read, write
}

// NetworkMode is the task's network mode as the containers report it
// ("awsvpc", "bridge", "host", ...); the first non-empty one wins.
func (t *TaskMetadata) NetworkMode() string {
	for _, c := range t.Containers {
		for _, n := range c.Networks {
			if n.NetworkMode != "" {
				return n.NetworkMode
			}
		}
	}
	return ""
}

// PerContainerNetwork reports whether each container has its own network
// namespace (bridge, and "none"/default docker modes), so interface
// counters must be kept per container. In awsvpc and host mode all
// containers share the interfaces and report the same counters.
func (t *TaskMetadata) PerContainerNetwork() bool {
	switch strings.ToLower(t.NetworkMode()) {
	case "awsvpc", "host":
		return false
	case "":
		// Unknown: keep per-container series rather than silently
		// dropping one container's traffic.
		return true
	default:
		return true
	}
}
