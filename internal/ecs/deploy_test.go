package ecs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/cloudwatch"
	"github.com/envelope-dev/envelope/internal/promtest"
)

// deployDir holds the ECS deployment files these tests keep honest.
const deployDir = "../../deploy/ecs"

type taskDef struct {
	Family      string `json:"family"`
	NetworkMode string `json:"networkMode"`
	CPU         string `json:"cpu"`
	Memory      string `json:"memory"`
	TaskRoleArn string `json:"taskRoleArn"`
	Containers  []struct {
		Name         string   `json:"name"`
		Image        string   `json:"image"`
		Essential    bool     `json:"essential"`
		Memory       int      `json:"memory"`
		Command      []string `json:"command"`
		PortMappings []struct {
			ContainerPort int `json:"containerPort"`
		} `json:"portMappings"`
	} `json:"containerDefinitions"`
}

func readTaskDef(t *testing.T, name string) taskDef {
	t.Helper()
	var td taskDef
	if err := json.Unmarshal(readFile(t, filepath.Join(deployDir, name)), &td); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return td
}

// The task definitions' exporter commands use only flags that exist, the
// sidecar listens on the default port and fits the task, and only the
// central exporter polls CloudWatch (once, not once per task), from the
// image that has the CloudWatch collector.
func TestTaskDefinitions(t *testing.T) {
	for _, tt := range []struct {
		file       string
		essential  bool
		cloudwatch bool
		tmds       bool
	}{
		{"task-definition.json", false, false, true},
		{"exporter-task-definition.json", true, true, false},
	} {
		t.Run(tt.file, func(t *testing.T) {
			td := readTaskDef(t, tt.file)
			if td.NetworkMode != "awsvpc" || td.CPU != "256" || td.Memory != "512" {
				t.Errorf("task %s: %s %s CPU / %s MiB", td.Family, td.NetworkMode, td.CPU, td.Memory)
			}
			found := false
			for _, c := range td.Containers {
				if !strings.Contains(c.Image, "envelope-exporter") {
					continue
				}
				found = true
				// The default image links no AWS SDK (-tags nocloudwatch);
				// the poller runs the one built with TAGS= (empty).
				if strings.HasSuffix(c.Image, "-cloudwatch") != tt.cloudwatch {
					t.Errorf("%s: image %s; a CloudWatch poller needs the image built with TAGS= (tag suffix -cloudwatch), a sidecar the default one", c.Name, c.Image)
				}
				if c.Essential != tt.essential {
					t.Errorf("%s: essential = %v, want %v", c.Name, c.Essential, tt.essential)
				}
				if len(c.PortMappings) != 1 || c.PortMappings[0].ContainerPort != 19466 {
					t.Errorf("%s: ports %+v, want 19466", c.Name, c.PortMappings)
				}
				if c.Memory > 512 {
					t.Errorf("%s: memory %d above the task's", c.Name, c.Memory)
				}
				if len(c.Command) == 0 || c.Command[0] != "serve" {
					t.Fatalf("%s: command %v", c.Name, c.Command)
				}
				app := kingpin.New("exporter", "")
				serve := app.Command("serve", "")
				ef := AddFlags(serve)
				cw := cloudwatch.AddFlags(serve)
				var ours []string
				for _, a := range c.Command[1:] {
					for _, p := range []string{"--ecs.", "--no-ecs.", "--cloudwatch.", "--no-cloudwatch."} {
						if strings.HasPrefix(a, p) {
							ours = append(ours, a)
						}
					}
				}
				if _, err := app.Parse(append([]string{"serve"}, ours...)); err != nil {
					t.Fatalf("%s: command %v: %v", c.Name, c.Command, err)
				}
				if cw.Enabled() != tt.cloudwatch || ef.Enabled != tt.tmds {
					t.Errorf("%s: CloudWatch on = %v, TMDS on = %v", c.Name, cw.Enabled(), ef.Enabled)
				}
				if err := cw.Validate(); err != nil {
					t.Errorf("%s: %v", c.Name, err)
				}
			}
			if !found {
				t.Fatal("no envelope-exporter container")
			}
			if tt.cloudwatch && td.TaskRoleArn == "" {
				t.Error("CloudWatch polling needs a task role")
			}
		})
	}
}

func TestIAMPolicies(t *testing.T) {
	for file, want := range map[string][]string{
		"iam-policy.json":            {"cloudwatch:GetMetricData"},
		"prometheus-iam-policy.json": {"ecs:ListTasks", "ecs:DescribeTasks", "ecs:ListServices", "ecs:DescribeServices"},
	} {
		var p struct {
			Version   string
			Statement []struct {
				Effect string
				Action []string
			}
		}
		if err := json.Unmarshal(readFile(t, filepath.Join(deployDir, file)), &p); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var actions []string
		for _, s := range p.Statement {
			if s.Effect == "Allow" {
				actions = append(actions, s.Action...)
			}
		}
		for _, a := range want {
			if !slices.Contains(actions, a) {
				t.Errorf("%s lacks %s", file, a)
			}
		}
		if p.Version != "2012-10-17" {
			t.Errorf("%s: Version %q", file, p.Version)
		}
	}
}

func TestPrometheusConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs promtool")
	}
	if _, err := os.Stat(filepath.Join(deployDir, "prometheus.yml")); err != nil {
		t.Fatal(err)
	}
	if out, err := promtest.Promtool(t, "check", "config", "--syntax-only", filepath.Join("deploy", "ecs", "prometheus.yml")); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}
