package dashboards

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const provisioningDir = "../../deploy/grafana/provisioning"

// The provisioning files parse, provide a prometheus data source and a
// file provider, and the compose stack mounts dashboards/ where the
// provider reads.
func TestProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, URL string
			UID             string `yaml:"uid"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(provisioningDir, "datasources", "prometheus.yaml"), &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("datasources: %+v, want one prometheus data source", ds)
	}

	var pv struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type, Folder string
			Options            struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(provisioningDir, "dashboards", "envelope.yaml"), &pv)
	if pv.APIVersion != 1 || len(pv.Providers) != 1 || pv.Providers[0].Type != "file" || pv.Providers[0].Options.Path == "" {
		t.Fatalf("providers: %+v, want one file provider with a path", pv)
	}

	compose, err := os.ReadFile("../../deploy/compose/compose.yaml")
	if os.IsNotExist(err) {
		return // the compose stack is optional for the dashboards
	} else if err != nil {
		t.Fatal(err)
	}
	for _, mount := range []string{
		"../../dashboards:" + pv.Providers[0].Options.Path,
		"../grafana/provisioning:/etc/grafana/provisioning",
	} {
		if !strings.Contains(string(compose), mount) {
			t.Errorf("compose.yaml does not mount %s", mount)
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
