package ecs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// Snapshot is one reading of a task's metadata endpoint: /task and
// /task/stats at Time. A snapshot file is NDJSON, one Snapshot per line,
// written by Record (`exporter ecs record`) from the sidecar while the
// baseline runs; snapshots of several tasks may share a file.
type Snapshot struct {
	Time  time.Time                  `json:"time"`
	Task  *TaskMetadata              `json:"task"`
	Stats map[string]*ContainerStats `json:"stats"`
}

// Run is one baseline run's window and request count.
type Run struct {
	Name       string
	Start, End time.Time
	Requests   int64
}

// Record reads the endpoint every interval until ctx is done or n
// snapshots are written (n <= 0: no limit), one JSON line each. A failed
// read is reported to onErr and skipped, so a long recording survives the
// endpoint's occasional HTTP 500.
func Record(ctx context.Context, c *Client, w io.Writer, interval time.Duration, n int, onErr func(error)) (int, error) {
	if interval <= 0 {
		interval = 10 * time.Second // Fargate refreshes stats every 10s
	}
	enc := json.NewEncoder(w)
	written := 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		task, err := c.Task(ctx)
		var stats map[string]*ContainerStats
		if err == nil {
			stats, err = c.TaskStats(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return written, nil
			}
			if onErr != nil {
				onErr(err)
			}
		} else {
			if err := enc.Encode(Snapshot{Time: time.Now().UTC(), Task: task, Stats: stats}); err != nil {
				return written, err
			}
			written++
			if n > 0 && written >= n {
				return written, nil
			}
		}
		select {
		case <-ctx.Done():
			return written, nil
		case <-tick.C:
		}
	}
}

// ReadSnapshots reads an NDJSON snapshot file; errors name the file, line
// and field.
func ReadSnapshots(r io.Reader, name string) ([]Snapshot, error) {
	var out []Snapshot
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var s Snapshot
		if err := decodeAt(name, line-1, b, &s); err != nil {
			return nil, err
		}
		switch {
		case s.Time.IsZero():
			return nil, fmt.Errorf("%s: line %d: field time: missing", name, line)
		case s.Task == nil:
			return nil, fmt.Errorf("%s: line %d: field task: missing", name, line)
		case s.Task.TaskARN == "":
			return nil, fmt.Errorf("%s: line %d: field task.TaskARN: missing", name, line)
		case s.Stats == nil:
			return nil, fmt.Errorf("%s: line %d: field stats: missing", name, line)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no snapshots", name)
	}
	return out, nil
}

func formatName(f string) string {
	if f == "" {
		return "unknown"
	}
	return f
}

// RunsFromEnvelope pairs each source's time window with its request count.
func RunsFromEnvelope(env *envelope.Envelope) ([]Run, error) {
	reqs := map[string]int64{}
	for _, r := range env.Runs {
		reqs[r.Source] = r.Requests
	}
	var runs []Run
	for i, s := range env.Provenance.Sources {
		if s.Start.IsZero() || s.End.IsZero() {
			return nil, fmt.Errorf("envelope: provenance.sources[%d] (%s, format %s): start and end are needed to match ECS snapshots, and this format carries no run times; "+
				"build the envelope from the runs' point files (k6 --out json or csv) or machine-readable summaries, "+
				"or, without snapshots, state the topology with `envelope baseline --topology KEY=VALUE` (or --params) instead", i, s.File, formatName(s.Format))
		}
		runs = append(runs, Run{Name: s.File, Start: s.Start, End: s.End, Requests: reqs[s.File]})
	}
	if len(runs) == 0 {
		return nil, errors.New("envelope: provenance.sources: no runs")
	}
	return runs, nil
}

// taskPoint is one snapshot reduced to the task totals the operating
// point needs.
type taskPoint struct {
	t          time.Time
	cpu        map[string]uint64 // container name -> cumulative ns
	workingSet float64           // bytes, all containers
	cpuLimit   float64           // vCPUs, 0 when unset
	memLimit   float64           // bytes, 0 when unset
}

func reduce(s Snapshot) taskPoint {
	p := taskPoint{t: s.Time, cpu: map[string]uint64{}}
	p.cpuLimit, _ = s.Task.TaskCPULimitVCPUs()
	p.memLimit, _ = s.Task.TaskMemoryLimitBytes()
	latest := time.Time{}
	for _, c := range s.Task.Containers {
		st := s.Stats[c.DockerID]
		if st.Empty() {
			continue
		}
		p.cpu[c.Name] = st.CPUStats.Usage.Total
		p.workingSet += float64(st.Memory.WorkingSet())
		if st.Read.After(latest) {
			latest = st.Read
		}
	}
	// The counters were sampled at the stats' read time, not when the
	// recorder asked.
	if !latest.IsZero() {
		p.t = latest
	}
	return p
}

// cpuDelta is the CPU seconds used between two points, handling a
// container restart (its counter going down) as a reset to zero.
func cpuDelta(a, b taskPoint) float64 {
	var ns float64
	for name, v := range b.cpu {
		prev, ok := a.cpu[name]
		switch {
		case !ok || v < prev:
			ns += float64(v)
		default:
			ns += float64(v - prev)
		}
	}
	return ns * nanoseconds
}

// OperatingPoint computes the envelope's ECS figures from snapshots that
// cover the runs. Per run: CPU utilisation is the CPU seconds used over
// the vCPU-seconds the task limits allowed (a mean over the run); memory
// utilisation is the peak task working set over the task memory limit;
// CPU seconds per request is the tasks' mean CPU rate times the run's
// duration over its requests. Bands are min and max across runs, Mean
// their mean. A run needs two snapshots of a task inside its window.
func OperatingPoint(snaps []Snapshot, runs []Run) (*envelope.ECS, error) {
	byTask := map[string][]taskPoint{}
	size := map[[2]float64]bool{}
	var out envelope.ECS
	for _, s := range snaps {
		p := reduce(s)
		byTask[s.Task.TaskARN] = append(byTask[s.Task.TaskARN], p)
		size[[2]float64{p.cpuLimit, p.memLimit}] = true
		if out.TaskCPUUnits == 0 && p.cpuLimit > 0 {
			out.TaskCPUUnits = int(math.Round(p.cpuLimit * cpuUnits))
		}
		if out.TaskMemoryMiB == 0 && p.memLimit > 0 {
			out.TaskMemoryMiB = int(math.Round(p.memLimit / mebibyte))
		}
	}
	if len(size) > 1 {
		return nil, errors.New("ecs: snapshots mix task sizes (Limits differ between snapshots); record one task definition per envelope")
	}
	for _, pts := range byTask {
		sort.Slice(pts, func(i, j int) bool { return pts[i].t.Before(pts[j].t) })
	}

	var cpuUtil, memUtil, perReq []float64
	for _, run := range runs {
		var cpuSec, allowed, rate, peakMem float64
		tasks := 0
		for _, pts := range byTask {
			var in []taskPoint
			for _, p := range pts {
				if !p.t.Before(run.Start) && !p.t.After(run.End) {
					in = append(in, p)
				}
			}
			if len(in) < 2 {
				continue
			}
			tasks++
			var used, covered float64
			for i := 1; i < len(in); i++ {
				used += cpuDelta(in[i-1], in[i])
				covered += in[i].t.Sub(in[i-1].t).Seconds()
			}
			for _, p := range in {
				if p.memLimit > 0 {
					peakMem = max(peakMem, p.workingSet/p.memLimit)
				}
			}
			if covered <= 0 {
				continue
			}
			cpuSec += used
			rate += used / covered
			if in[0].cpuLimit > 0 {
				allowed += covered * in[0].cpuLimit
			}
		}
		if tasks == 0 {
			continue
		}
		out.Tasks = max(out.Tasks, tasks)
		if allowed > 0 {
			cpuUtil = append(cpuUtil, cpuSec/allowed)
		}
		if peakMem > 0 {
			memUtil = append(memUtil, peakMem)
		}
		if d := run.End.Sub(run.Start).Seconds(); run.Requests > 0 && d > 0 {
			perReq = append(perReq, rate*d/float64(run.Requests))
		}
	}
	if out.Tasks == 0 {
		return nil, errors.New("ecs: no run has two snapshots of a task inside its time window; check the snapshot times against the runs' start and end")
	}
	out.CPUUtilisation = band(cpuUtil)
	out.MemoryUtilisation = band(memUtil)
	out.CPUSecondsPerRequest = band(perReq)
	return &out, nil
}

func band(v []float64) envelope.Band {
	if len(v) == 0 {
		return envelope.Band{}
	}
	b := envelope.Band{Min: v[0], Max: v[0], N: len(v)}
	sum := 0.0
	for _, x := range v {
		b.Min = min(b.Min, x)
		b.Max = max(b.Max, x)
		sum += x
	}
	b.Mean = sum / float64(len(v))
	return b
}
