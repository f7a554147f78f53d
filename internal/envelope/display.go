package envelope

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SetLabels gives endpoints their display names. Every name must be an
// endpoint of the envelope; the error lists the ones it has.
func (env *Envelope) SetLabels(labels map[string]string) error {
	var unknown []string
	for name, label := range labels {
		ep, ok := env.Endpoints[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		ep.Label = label
		env.Endpoints[name] = ep
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		have := make([]string, 0, len(env.Endpoints))
		for k := range env.Endpoints {
			have = append(have, k)
		}
		sort.Strings(have)
		if len(have) == 0 {
			return fmt.Errorf("endpoint labels for %s, but the envelope has no endpoints (give --group-by, or runs with custom trends)", strings.Join(unknown, ", "))
		}
		return fmt.Errorf("endpoint labels for %s: no such endpoint (endpoints: %s)", strings.Join(unknown, ", "), strings.Join(have, ", "))
	}
	return nil
}

// topologyKeys are the keys of a topology, as flags and files spell them.
const topologyKeys = "platform, tasks_per_service, task_cpu_units, task_memory_mib, runtime, load_generator, note"

// Set sets one topology fact from key and value; where names the source
// in errors (a flag or file:line).
func (t *Topology) Set(key, value, where string) error {
	num := func(dst *int) error {
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n <= 0 {
			return fmt.Errorf("%s: %s %q: want a positive whole number", where, key, value)
		}
		*dst = n
		return nil
	}
	switch strings.ReplaceAll(strings.TrimSpace(key), "-", "_") {
	case "platform":
		t.Platform = value
	case "tasks_per_service", "tasks":
		return num(&t.TasksPerService)
	case "task_cpu_units", "cpu":
		return num(&t.TaskCPUUnits)
	case "task_memory_mib", "memory":
		return num(&t.TaskMemoryMiB)
	case "runtime":
		t.Runtime = value
	case "load_generator":
		t.LoadGenerator = value
	case "note", "notes":
		t.Notes = append(t.Notes, value)
	default:
		return fmt.Errorf("%s: unknown topology key %q (want %s)", where, key, topologyKeys)
	}
	return nil
}

// BaselineParams are the facts a baseline's runs do not carry: endpoint
// display names and the topology.
//
//	labels:
//	  auth_login: Auth login (Cognito)
//	topology:
//	  tasks_per_service: 1
//	  task_cpu_units: 256
//	  task_memory_mib: 512
//	  runtime: GraalVM native images
//	  load_generator: in-VPC EC2
type BaselineParams struct {
	Labels   map[string]string
	Topology *Topology
}

// LoadBaselineParams reads a BaselineParams YAML file; errors name the
// file, line and field.
func LoadBaselineParams(path string) (*BaselineParams, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := &BaselineParams{Labels: map[string]string{}}
	if len(doc.Content) == 0 {
		return p, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping of labels and topology", path, root.Line)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: field %s: want a mapping", path, v.Line, k.Value)
		}
		switch k.Value {
		case "labels":
			for j := 0; j+1 < len(v.Content); j += 2 {
				if v.Content[j+1].Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("%s:%d: field labels.%s: want a single value", path, v.Content[j+1].Line, v.Content[j].Value)
				}
				p.Labels[v.Content[j].Value] = v.Content[j+1].Value
			}
		case "topology":
			p.Topology = &Topology{}
			for j := 0; j+1 < len(v.Content); j += 2 {
				key, val := v.Content[j], v.Content[j+1]
				where := fmt.Sprintf("%s:%d: field topology.%s", path, val.Line, key.Value)
				if key.Value == "notes" && val.Kind == yaml.SequenceNode {
					for _, n := range val.Content {
						p.Topology.Notes = append(p.Topology.Notes, n.Value)
					}
					continue
				}
				if val.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("%s: want a single value", where)
				}
				if err := p.Topology.Set(key.Value, val.Value, where); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown field %q (want labels, topology)", path, k.Line, k.Value)
		}
	}
	return p, nil
}
