package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/promtest"
)

// Tests run in deploy/; the module root is one up.
const root = ".."

// docs decodes every YAML document of a file into generic maps.
func docs(t *testing.T, rel string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for i := 1; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", rel, i, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

// get walks a decoded YAML tree by keys and returns the leaf (nil if absent).
func get(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

func str(m any, keys ...string) string { s, _ := get(m, keys...).(string); return s }
func list(m any, keys ...string) []any { l, _ := get(m, keys...).([]any); return l }
func strmap(m any, keys ...string) map[string]string {
	out := map[string]string{}
	mm, _ := get(m, keys...).(map[string]any)
	for k, v := range mm {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// subset reports whether every pair of sel is in labels (a selector
// selecting a label set).
func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Every YAML file under deploy/ parses, all documents of it.
func TestYAMLParses(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		n++
		if len(docs(t, filepath.Join("deploy", p))) == 0 {
			t.Errorf("deploy/%s: no YAML document", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("found %d YAML files under deploy/, want the compose, Prometheus, Alertmanager and Kubernetes files", n)
	}
}

// kustomization returns the resources and configMapGenerator files of a
// kustomization, checking that every one exists.
func kustomization(t *testing.T, dir string) (resources []string, generated map[string][]string) {
	t.Helper()
	k := docs(t, filepath.Join(dir, "kustomization.yaml"))[0]
	if str(k, "kind") != "Kustomization" {
		t.Errorf("%s/kustomization.yaml: kind %q", dir, str(k, "kind"))
	}
	for _, r := range list(k, "resources") {
		resources = append(resources, r.(string))
	}
	generated = map[string][]string{}
	for _, g := range list(k, "configMapGenerator") {
		for _, f := range list(g, "files") {
			generated[str(g, "name")] = append(generated[str(g, "name")], f.(string))
		}
	}
	for _, f := range append(slices.Clone(resources), slices.Concat(mapsValues(generated)...)...) {
		if _, err := os.Stat(filepath.Join(root, dir, f)); err != nil {
			t.Errorf("%s/kustomization.yaml names %s: %v", dir, f, err)
		}
	}
	return resources, generated
}

func mapsValues(m map[string][]string) [][]string {
	var out [][]string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// The kustomize base: every object has apiVersion, kind and name, and the
// fields its kind needs; the objects agree with each other (selectors,
// port names, ConfigMap names).
func TestKubernetesBase(t *testing.T) {
	const dir = "deploy/kubernetes"
	resources, generated := kustomization(t, dir)
	objs := map[string][]map[string]any{}
	for _, r := range resources {
		for _, o := range docs(t, filepath.Join(dir, r)) {
			for _, f := range []string{"apiVersion", "kind"} {
				if str(o, f) == "" {
					t.Errorf("%s: object without %s", r, f)
				}
			}
			if str(o, "metadata", "name") == "" {
				t.Errorf("%s: %s without metadata.name", r, str(o, "kind"))
			}
			objs[str(o, "kind")] = append(objs[str(o, "kind")], o)
		}
	}
	for _, kind := range []string{"Deployment", "Service", "ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		if len(objs[kind]) == 0 {
			t.Fatalf("%s: no %s", dir, kind)
		}
	}

	dep := objs["Deployment"][0]
	podLabels := strmap(dep, "spec", "template", "metadata", "labels")
	if !subset(strmap(dep, "spec", "selector", "matchLabels"), podLabels) {
		t.Errorf("Deployment selector %v does not match template labels %v", strmap(dep, "spec", "selector", "matchLabels"), podLabels)
	}
	containers := list(dep, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("Deployment: no containers")
	}
	containerPorts := map[string]int{}
	for _, c := range containers {
		if str(c, "image") == "" || str(c, "name") == "" {
			t.Errorf("Deployment container without name or image: %v", c)
		}
		for _, p := range list(c, "ports") {
			containerPorts[str(p, "name")] = get(p, "containerPort").(int)
		}
		// The volume the envelope is read from is the generated ConfigMap.
		for _, a := range list(c, "args") {
			if strings.HasPrefix(a.(string), "--envelope=") && len(list(c, "volumeMounts")) == 0 {
				t.Errorf("Deployment passes %s without a volume mount", a)
			}
		}
	}
	if containerPorts["http"] != defaultPort(t) {
		t.Errorf("Deployment http containerPort %d, want the exporter's default %d", containerPorts["http"], defaultPort(t))
	}
	for _, v := range list(dep, "spec", "template", "spec", "volumes") {
		if cm := str(v, "configMap", "name"); cm != "" && generated[cm] == nil {
			t.Errorf("Deployment mounts ConfigMap %s, which the kustomization does not generate", cm)
		}
	}
	if get(dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("Deployment: pod not runAsNonRoot")
	}

	svc := objs["Service"][0]
	if !subset(strmap(svc, "spec", "selector"), podLabels) {
		t.Errorf("Service selector %v selects no Deployment pod (labels %v)", strmap(svc, "spec", "selector"), podLabels)
	}
	svcPorts := map[string]bool{}
	for _, p := range list(svc, "spec", "ports") {
		if get(p, "port") == nil {
			t.Errorf("Service port without port: %v", p)
		}
		if tp := str(p, "targetPort"); tp != "" {
			if _, ok := containerPorts[tp]; !ok {
				t.Errorf("Service targetPort %q is no container port name", tp)
			}
		}
		svcPorts[str(p, "name")] = true
	}
	if len(svcPorts) == 0 {
		t.Error("Service: no ports")
	}

	sm := objs["ServiceMonitor"][0]
	if !subset(strmap(sm, "spec", "selector", "matchLabels"), strmap(svc, "metadata", "labels")) {
		t.Errorf("ServiceMonitor selector does not select the Service")
	}
	eps := list(sm, "spec", "endpoints")
	if len(eps) == 0 {
		t.Error("ServiceMonitor: no endpoints")
	}
	for _, e := range eps {
		if !svcPorts[str(e, "port")] {
			t.Errorf("ServiceMonitor endpoint port %q is no Service port name", str(e, "port"))
		}
	}
	if get(sm, "spec", "scrapeNativeHistograms") != true {
		t.Error("ServiceMonitor does not scrape native histograms")
	}

	for _, pr := range objs["PrometheusRule"] {
		groups := get(pr, "spec", "groups")
		if len(list(pr, "spec", "groups")) == 0 {
			t.Fatalf("PrometheusRule %s: no spec.groups", str(pr, "metadata", "name"))
		}
		b, err := yaml.Marshal(map[string]any{"groups": groups})
		if err != nil {
			t.Fatal(err)
		}
		if _, errs := rulefmt.Parse(b, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler)); len(errs) > 0 {
			t.Errorf("PrometheusRule %s: %v", str(pr, "metadata", "name"), errors.Join(errs...))
		}
	}

	dashCMs := 0
	for _, cm := range objs["ConfigMap"] {
		if strmap(cm, "metadata", "labels")[DashboardLabel] == "1" {
			dashCMs++
			if len(strmap(cm, "data")) == 0 {
				t.Errorf("ConfigMap %s: no data", str(cm, "metadata", "name"))
			}
		}
	}
	if dashCMs == 0 {
		t.Errorf("no ConfigMap labelled %s: \"1\"", DashboardLabel)
	}
}

// The dashboards ConfigMaps hold dashboards/*.json byte for byte, one
// file per map, and the label is the string "1" (the sidecar compares
// strings; an unquoted 1 would be an integer and fail validation).
func TestDashboardConfigMapsMatchDashboards(t *testing.T) {
	dashes, err := Dashboards(root)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, KubeDashboards))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(DashboardLabel+`: "1"`)) {
		t.Errorf("%s: label value not quoted", KubeDashboards)
	}
	got := map[string]string{}
	for _, cm := range docs(t, KubeDashboards) {
		for k, v := range strmap(cm, "data") {
			if _, dup := got[k]; dup {
				t.Errorf("dashboard %s in two ConfigMaps", k)
			}
			got[k] = v
		}
	}
	if len(got) != len(dashes) {
		t.Errorf("%d dashboards in ConfigMaps, %d in dashboards/", len(got), len(dashes))
	}
	for _, d := range dashes {
		if got[d.File] != string(d.Data) {
			t.Errorf("ConfigMap data %s differs from dashboards/%s", d.File, d.File)
		}
		if !json.Valid([]byte(got[d.File])) {
			t.Errorf("ConfigMap data %s is not valid JSON", d.File)
		}
	}
}

// Literal blocks must give back any file's bytes exactly: trailing
// newlines or none, leading spaces, trailing spaces, tabs, unicode.
func TestDashboardConfigMapsRoundTrip(t *testing.T) {
	cases := map[string]string{
		"plain.json":         "{\n  \"a\": 1\n}\n",
		"no-newline.json":    "{\"a\": 1}",
		"two-newlines.json":  "{\"a\": 1}\n\n",
		"leading-space.json": "  {\n\t\"b\": \"x \"   \n}\n",
		"Odd Name_ü.json":    "{\"title\": \"Überblick — p95\"}\n",
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, DashboardsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range cases {
		if err := os.WriteFile(filepath.Join(dir, DashboardsDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := DashboardConfigMaps(dir)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	seen := 0
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for {
		var cm struct {
			Metadata struct {
				Name   string            `yaml:"name"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&cm); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !dns.MatchString(cm.Metadata.Name) {
			t.Errorf("ConfigMap name %q is not DNS-1123", cm.Metadata.Name)
		}
		for k, v := range cm.Data {
			seen++
			if v != cases[k] {
				t.Errorf("%s: got %q, want %q", k, v, cases[k])
			}
		}
	}
	if seen != len(cases) {
		t.Errorf("round-tripped %d files, want %d", seen, len(cases))
	}

	// Binary content cannot go in data: a clear error naming the file.
	if err := os.WriteFile(filepath.Join(dir, DashboardsDir, "bad.json"), []byte("{\x00}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DashboardConfigMaps(dir); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("binary dashboard: err = %v, want one naming bad.json", err)
	}
}

// Generation fails clearly when a source is missing.
func TestGenerateMissingSources(t *testing.T) {
	dir := t.TempDir()
	_, err := Generate(dir)
	if err == nil || !strings.Contains(err.Error(), RulesDir) {
		t.Fatalf("empty root: err = %v, want one naming %s", err, RulesDir)
	}
	if err := os.MkdirAll(filepath.Join(dir, RulesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RulesDir, "x.rules.yaml"), []byte("groups: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir); err == nil || !strings.Contains(err.Error(), "PrometheusRule") {
		t.Errorf("rules without a PrometheusRule: err = %v", err)
	}
}

// The committed generated files are what `go generate` would write now
// (the CI drift check, runnable locally).
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	if stale := Stale(root, files); len(stale) > 0 {
		t.Errorf("%v: %v", ErrStale, stale)
	}
	// Twice gives the same bytes: nothing depends on time or map order.
	again, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if !bytes.Equal(files[i].Data, again[i].Data) {
			t.Errorf("%s: two generations differ", files[i].Path)
		}
	}
}

// The module's kustomize (go.mod's tool directive) builds both
// kustomizations: the output holds every object of their resources and
// one ConfigMap per generator, the base's objects carry its part-of label,
// and what names a generated ConfigMap names it as built (with kustomize's
// content hash, unless the generator turns that off).
func TestKustomizeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kustomize")
	}
	for _, dir := range []string{"deploy/kubernetes", "deploy/kubernetes/k6-operator"} {
		out, err := promtest.Tool(t, "kustomize", "build", dir)
		if err != nil {
			t.Errorf("%v\n%s", err, out)
			continue
		}
		built := map[string]map[string]any{} // kind/name
		dec := yaml.NewDecoder(bytes.NewReader(out))
		for {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			built[str(m, "kind")+"/"+str(m, "metadata", "name")] = m
		}
		resources, generated := kustomization(t, dir)
		want := 0
		for _, r := range resources {
			for _, d := range docs(t, filepath.Join(dir, r)) {
				key := str(d, "kind") + "/" + str(d, "metadata", "name")
				want++
				if built[key] == nil {
					t.Errorf("kustomize build %s: no %s (from %s)", dir, key, r)
				}
			}
		}
		for name := range generated {
			cm := builtConfigMap(built, name)
			if cm == "" {
				t.Errorf("kustomize build %s: no ConfigMap generated as %s", dir, name)
				continue
			}
			want++
			if dir == "deploy/kubernetes" && cm == name {
				t.Errorf("kustomize build %s: ConfigMap %s has no content hash", dir, name)
			}
			if refs := bytes.Count(out, []byte(" "+name+"\n")); cm != name && refs > 0 {
				t.Errorf("kustomize build %s: %d references to %s left unrewritten (built as %s)", dir, refs, name, cm)
			}
		}
		if len(built) != want {
			t.Errorf("kustomize build %s: %d objects, want %d", dir, len(built), want)
		}
		if dir == "deploy/kubernetes" {
			for key, m := range built {
				if strmap(m, "metadata", "labels")["app.kubernetes.io/part-of"] != "envelope" {
					t.Errorf("kustomize build %s: %s lacks the part-of label", dir, key)
				}
			}
		}
	}
}

// builtConfigMap returns the name a generated ConfigMap got in a
// kustomize build: name itself or name plus a content hash; "" if none.
func builtConfigMap(built map[string]map[string]any, name string) string {
	for key := range built {
		n, ok := strings.CutPrefix(key, "ConfigMap/")
		if ok && (n == name || (strings.HasPrefix(n, name+"-") && len(n) == len(name)+11)) {
			return n
		}
	}
	return ""
}

// The k6-operator example pushes OTLP to the exporter Service with a
// testid tag and several runners.
func TestK6OperatorTestRun(t *testing.T) {
	const dir = "deploy/kubernetes/k6-operator"
	resources, generated := kustomization(t, dir)
	svc := docs(t, "deploy/kubernetes/service.yaml")[0]
	svcPort := fmt.Sprint(get(list(svc, "spec", "ports")[0], "port"))
	for _, r := range resources {
		for _, tr := range docs(t, filepath.Join(dir, r)) {
			if str(tr, "kind") != "TestRun" || !strings.HasPrefix(str(tr, "apiVersion"), "k6.io/") {
				continue
			}
			if p, _ := get(tr, "spec", "parallelism").(int); p < 2 {
				t.Errorf("TestRun parallelism %v: the example is about distributed k6", get(tr, "spec", "parallelism"))
			}
			if cm := str(tr, "spec", "script", "configMap", "name"); generated[cm] == nil {
				t.Errorf("TestRun script ConfigMap %q is not generated by the kustomization", cm)
			}
			args := str(tr, "spec", "arguments")
			for _, want := range []string{"--out opentelemetry", "--tag testid="} {
				if !strings.Contains(args, want) {
					t.Errorf("TestRun arguments %q lack %q", args, want)
				}
			}
			env := map[string]string{}
			for _, e := range list(tr, "spec", "runner", "env") {
				env[str(e, "name")] = str(e, "value")
			}
			checkOTLPEnv(t, "TestRun", env, str(svc, "metadata", "name")+":"+svcPort)
			return
		}
	}
	t.Fatal("no TestRun in " + dir)
}

func checkOTLPEnv(t *testing.T, who string, env map[string]string, endpoint string) {
	t.Helper()
	want := map[string]string{
		"K6_OTEL_EXPORTER_PROTOCOL":      "http/protobuf",
		"K6_OTEL_HTTP_EXPORTER_ENDPOINT": endpoint,
		"K6_OTEL_HTTP_EXPORTER_INSECURE": "true",
		"K6_OTEL_METRIC_PREFIX":          "k6_",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s: %s=%q, want %q", who, k, env[k], v)
		}
	}
	if p, ok := env["K6_OTEL_HTTP_EXPORTER_URL_PATH"]; ok && p != "/v1/metrics" {
		t.Errorf("%s: K6_OTEL_HTTP_EXPORTER_URL_PATH=%q, the exporter receives on /v1/metrics", who, p)
	}
}

// defaultPort is the exporter's default port, so a change there fails
// here rather than in a cluster.
func defaultPort(t *testing.T) int {
	t.Helper()
	p, err := strconv.Atoi(exporter.DefaultPort)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The compose file: every bind mount and build context exists, Prometheus
// loads the committed rules, Grafana mounts the dashboards where the
// provisioning provider reads them, and k6 pushes to the exporter.
func TestCompose(t *testing.T) {
	const dir = "deploy/compose"
	c := docs(t, filepath.Join(dir, "compose.yaml"))[0]
	services, _ := get(c, "services").(map[string]any)
	for _, want := range []string{"exporter", "prometheus", "alertmanager", "grafana", "k6"} {
		if services[want] == nil {
			t.Errorf("compose: no %s service", want)
		}
	}
	mounts := map[string]map[string]string{} // service -> target -> source (module-relative)
	for name, s := range services {
		mounts[name] = map[string]string{}
		for _, v := range list(s, "volumes") {
			parts := strings.SplitN(v.(string), ":", 3)
			if len(parts) < 2 || !strings.HasPrefix(parts[0], ".") {
				continue // named volume
			}
			src := path.Join(dir, parts[0])
			mounts[name][parts[1]] = src
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Errorf("compose %s mounts %s: %v", name, parts[0], err)
			}
		}
		if ctx := str(s, "build", "context"); ctx != "" {
			df := path.Join(dir, ctx, str(s, "build", "dockerfile"))
			if _, err := os.Stat(filepath.Join(root, df)); err != nil {
				t.Errorf("compose %s builds %s: %v", name, df, err)
			}
		}
		if img := str(s, "image"); img != "" && !strings.Contains(img, ":") {
			t.Errorf("compose %s: image %s not pinned to a tag", name, img)
		}
	}
	// Prometheus mounts the config, and rules/ at the path the config's
	// relative rule_files resolve to inside the container.
	if mounts["prometheus"]["/etc/prometheus/prometheus.yml"] != "deploy/prometheus/prometheus.yml" {
		t.Errorf("compose prometheus does not mount deploy/prometheus/prometheus.yml: %v", mounts["prometheus"])
	}
	prom := docs(t, "deploy/prometheus/prometheus.yml")[0]
	for _, rf := range list(prom, "rule_files") {
		inContainer := path.Join("/etc/prometheus", rf.(string))
		dirIn := path.Dir(inContainer)
		if src, ok := mounts["prometheus"][dirIn]; !ok || src != path.Join("deploy/prometheus", path.Dir(rf.(string))) {
			t.Errorf("rule file %s resolves to %s in the container, where %v is mounted", rf, inContainer, mounts["prometheus"][dirIn])
		}
	}
	// Grafana: provisioning mounted, and the dashboards folder mounted at
	// the path the provider reads.
	if mounts["grafana"]["/etc/grafana/provisioning"] != "deploy/grafana/provisioning" {
		t.Errorf("compose grafana does not mount deploy/grafana/provisioning: %v", mounts["grafana"])
	}
	var dashTarget string
	for tgt, src := range mounts["grafana"] {
		if src == DashboardsDir {
			dashTarget = tgt
		}
	}
	if dashTarget == "" {
		t.Error("compose grafana does not mount dashboards/")
	}
	providers, _ := filepath.Glob(filepath.Join(root, "deploy/grafana/provisioning/dashboards/*.y*ml"))
	if len(providers) == 0 {
		t.Error("no Grafana dashboard provider in deploy/grafana/provisioning/dashboards")
	}
	for _, p := range providers {
		rel, _ := filepath.Rel(root, p)
		for _, d := range docs(t, rel) {
			for _, pr := range list(d, "providers") {
				if got := str(pr, "options", "path"); got != dashTarget {
					t.Errorf("%s reads dashboards from %q, compose mounts them at %q", rel, got, dashTarget)
				}
			}
		}
	}

	// k6 pushes OTLP to the exporter's port, tags testid, and its script exists.
	k6 := services["k6"]
	env := strmap(k6, "environment")
	checkOTLPEnv(t, "compose k6", env, fmt.Sprintf("exporter:%d", defaultPort(t)))
	cmd := strings.Join(toStrings(list(k6, "command")), " ")
	for _, want := range []string{"--out=opentelemetry", "--tag=testid="} {
		if !strings.Contains(cmd, want) {
			t.Errorf("compose k6 command %q lacks %q", cmd, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, dir, "k6/script.js")); err != nil {
		t.Error(err)
	}
	// The NDJSON alternative writes the file the exporter follows.
	exp := strings.Join(toStrings(list(services["exporter"], "command")), " ")
	ndjson := strings.Join(toStrings(list(services["k6-ndjson"], "command")), " ")
	if m := regexp.MustCompile(`--k6\.json=(\S+)`).FindStringSubmatch(exp); m == nil || !strings.Contains(ndjson, "--out=json="+m[1]) {
		t.Errorf("compose: exporter follows %v but k6-ndjson writes %q", m, ndjson)
	}
	for _, p := range toStrings(list(services["exporter"], "ports")) {
		if !strings.HasSuffix(p, fmt.Sprint(defaultPort(t))) {
			t.Errorf("compose exporter port %s is not the default %d", p, defaultPort(t))
		}
	}
}

func toStrings(l []any) []string {
	var out []string
	for _, v := range l {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// promtool check config passes on every Prometheus config (it also checks
// the rule files the config names), run with the module's promtool.
func TestPromtoolCheckConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds promtool")
	}
	// Every Prometheus config under deploy/ (compose's, and ECS's): the
	// YAML files with scrape_configs.
	var configs []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yml") && !strings.HasSuffix(p, ".yaml")) {
			return err
		}
		for _, doc := range docs(t, filepath.Join("deploy", p)) {
			if _, ok := doc["scrape_configs"]; ok {
				configs = append(configs, filepath.Join("deploy", p))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(configs, filepath.Join("deploy", "prometheus", "prometheus.yml")) {
		t.Fatalf("Prometheus configs found: %v; want deploy/prometheus/prometheus.yml among them", configs)
	}
	// One promtool run for all: each `go tool` start costs seconds.
	out, err := promtest.Promtool(t, append([]string{"check", "config", "--lint=all", "--lint-fatal"}, configs...)...)
	if err != nil {
		t.Errorf("promtool check config %v: %v\n%s", configs, err, out)
	}
	for _, c := range configs {
		if !bytes.Contains(out, []byte("SUCCESS: "+c+" is valid")) {
			t.Errorf("promtool check config: no SUCCESS line for %s\n%s", c, out)
		}
	}
	// The compose config names the committed rules, which promtool checked.
	if !bytes.Contains(out, []byte("Checking rules/envelope.rules.yaml")) {
		t.Errorf("promtool did not check the rules the compose Prometheus loads\n%s", out)
	}
}

// The Alertmanager config: every route names a defined receiver and the
// matchers parse.
func TestAlertmanagerConfig(t *testing.T) {
	const rel = "deploy/alertmanager/alertmanager.yml"
	c := docs(t, rel)[0]
	receivers := map[string]bool{}
	for _, r := range list(c, "receivers") {
		receivers[str(r, "name")] = true
	}
	var walk func(route any, where string)
	walk = func(route any, where string) {
		if r := str(route, "receiver"); r != "" && !receivers[r] {
			t.Errorf("%s: %s receiver %q is not defined", rel, where, r)
		}
		for _, m := range list(route, "matchers") {
			if _, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + m.(string) + "}"); err != nil {
				t.Errorf("%s: %s matcher %q: %v", rel, where, m, err)
			}
		}
		for i, sub := range list(route, "routes") {
			walk(sub, fmt.Sprintf("%s.routes[%d]", where, i))
		}
	}
	if str(c, "route", "receiver") == "" {
		t.Errorf("%s: the root route needs a receiver", rel)
	}
	walk(get(c, "route"), "route")
	for i, ir := range list(c, "inhibit_rules") {
		for _, k := range []string{"source_matchers", "target_matchers"} {
			for _, m := range list(ir, k) {
				if _, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + m.(string) + "}"); err != nil {
					t.Errorf("%s: inhibit_rules[%d].%s %q: %v", rel, i, k, m, err)
				}
			}
		}
	}
	// amtool check-config runs on this file in internal/stack's
	// TestAlertmanagerConfig, beside the stack's own config: that package
	// builds Alertmanager's module anyway, and this one, whose test binary
	// starts early on a cold cache, would wait minutes for it.
}

// Prometheus in compose sends alerts to the compose Alertmanager and
// scrapes the exporter on its default port with native histograms.
func TestPrometheusConfigWiring(t *testing.T) {
	prom := docs(t, "deploy/prometheus/prometheus.yml")[0]
	if get(prom, "global", "scrape_native_histograms") != true {
		t.Error("prometheus.yml: scrape_native_histograms is not on (Prometheus >= 3.8 needs it)")
	}
	if get(prom, "global", "always_scrape_classic_histograms") != true {
		t.Error("prometheus.yml: classic buckets not kept; the band-edge rules read them")
	}
	var targets []string
	for _, sc := range list(prom, "scrape_configs") {
		for _, s := range list(sc, "static_configs") {
			targets = append(targets, toStrings(list(s, "targets"))...)
		}
	}
	if !slices.Contains(targets, fmt.Sprintf("exporter:%d", defaultPort(t))) {
		t.Errorf("prometheus.yml scrapes %v, not the exporter", targets)
	}
	var am []string
	for _, a := range list(prom, "alerting", "alertmanagers") {
		for _, s := range list(a, "static_configs") {
			am = append(am, toStrings(list(s, "targets"))...)
		}
	}
	if !slices.Contains(am, "alertmanager:9093") {
		t.Errorf("prometheus.yml alerts to %v, not the compose alertmanager", am)
	}
	if len(list(prom, "rule_files")) == 0 {
		t.Error("prometheus.yml loads no rules")
	}
}

// The Dockerfile: multi-stage, static, non-root, small base, the default
// port, exporter serve.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	var froms, users []string
	for _, line := range strings.Split(df, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			froms = append(froms, f[1])
		case "USER":
			users = append(users, f[1])
		}
	}
	if len(froms) < 2 {
		t.Errorf("Dockerfile: %d stages, want a multi-stage build", len(froms))
	}
	if last := froms[len(froms)-1]; !strings.Contains(last, "distroless/static") && last != "scratch" {
		t.Errorf("Dockerfile: final base %s is not distroless static or scratch", last)
	}
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1], "0") || strings.HasPrefix(users[len(users)-1], "root") {
		t.Errorf("Dockerfile: final USER %v is root", users)
	}
	for _, want := range []string{
		"CGO_ENABLED=0",
		fmt.Sprintf("EXPOSE %d", defaultPort(t)),
		`ENTRYPOINT ["/bin/exporter"]`,
		`CMD ["serve"]`,
		"./cmd/exporter",
		// The daemon's binary is the smallest build by default.
		`ARG TAGS=nocloudwatch`,
		`-tags "${TAGS}"`,
		// The command line's image, for CI pipelines.
		"AS cli",
		"./cmd/envelope",
		`ENTRYPOINT ["/bin/envelope"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// .dockerignore must not drop anything the binaries are built from:
// every package of this module that cmd/exporter or cmd/envelope
// imports, and every file those packages embed.
func TestDockerignoreKeepsBuildInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.TrimPrefix(l, "/"))
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,Module,EmbedFiles,GoFiles", "./cmd/exporter", "./cmd/envelope")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, _ := filepath.Abs(root)
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Dir        string
			Module     *struct{ Path string }
			EmbedFiles []string
			GoFiles    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/envelope-dev/envelope" {
			continue
		}
		rel, _ := filepath.Rel(abs, p.Dir)
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			checked++
			file := filepath.ToSlash(filepath.Join(rel, f))
			if pat := ignored(file, patterns); pat != "" {
				t.Errorf(".dockerignore pattern %q drops %s, which %s needs", pat, file, p.ImportPath)
			}
		}
	}
	if checked == 0 {
		t.Error("go list found no files of this module")
	}
}

// ignored returns the .dockerignore pattern that excludes file, or "" when
// the file stays in the context (Docker's rules as far as this file uses
// them: a pattern matches the path or any of its parent folders; **
// matches any number of folders; the last matching pattern decides, and
// one starting with ! takes the file back in).
func ignored(file string, patterns []string) string {
	parts := strings.Split(file, "/")
	excluded := ""
	for _, pat := range patterns {
		keep := strings.HasPrefix(pat, "!")
		if matchesOrParent(parts, strings.TrimPrefix(pat, "!")) {
			excluded = pat
			if keep {
				excluded = ""
			}
		}
	}
	return excluded
}

// matchesOrParent reports whether a .dockerignore pattern matches the path
// of parts or one of its parent folders.
func matchesOrParent(parts []string, pat string) bool {
	for i := 1; i <= len(parts); i++ {
		if strings.HasPrefix(pat, "**/") {
			if ok, _ := path.Match(strings.TrimPrefix(pat, "**/"), parts[i-1]); ok {
				return true
			}
			continue
		}
		if ok, _ := path.Match(pat, strings.Join(parts[:i], "/")); ok {
			return true
		}
	}
	return false
}

func TestIgnoredMatcher(t *testing.T) {
	pats := []string{"deploy", "**/testdata", "!testdata/k6/*.summary.json", "*.test", "exporter"}
	for file, want := range map[string]string{
		"deploy/compose/compose.yaml":     "deploy",
		"internal/k6/testdata/a.ndjson":   "**/testdata",
		"testdata/k6/a.ndjson":            "**/testdata",
		"testdata/k6/a.summary.json":      "",
		"testdata/k6/sub/a.summary.json":  "**/testdata",
		"cmd/exporter/main.go":            "",
		"exporter":                        "exporter",
		"x.test":                          "*.test",
		"internal/demo/runs/run-1.json":   "",
		"internal/deploy/not-the-same.go": "",
	} {
		if got := ignored(file, pats); got != want {
			t.Errorf("ignored(%q) = %q, want %q", file, got, want)
		}
	}
}

// The Alertmanager config groups by labels the generated alerts carry,
// and its inhibit rules can match: for each, some alert of the committed
// promtool tests (whose labels promtool checks against real evaluation)
// is a source and another a target with equal values of every `equal`
// label.
func TestAlertmanagerMatchesAlertLabels(t *testing.T) {
	var am struct {
		Route struct {
			GroupBy []string `yaml:"group_by"`
		} `yaml:"route"`
		Inhibit []struct {
			Source []string `yaml:"source_matchers"`
			Target []string `yaml:"target_matchers"`
			Equal  []string `yaml:"equal"`
		} `yaml:"inhibit_rules"`
	}
	b, err := os.ReadFile(filepath.Join("alertmanager", "alertmanager.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &am); err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			Alerts []struct {
				Alertname string `yaml:"alertname"`
				Exp       []struct {
					Labels map[string]string `yaml:"exp_labels"`
				} `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	tb, err := os.ReadFile(filepath.Join(root, "rules", "envelope.rules.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(tb, &tests); err != nil {
		t.Fatal(err)
	}
	var alerts []map[string]string
	for _, g := range tests.Tests {
		for _, a := range g.Alerts {
			for _, e := range a.Exp {
				l := map[string]string{"alertname": a.Alertname}
				for k, v := range e.Labels {
					l[k] = v
				}
				alerts = append(alerts, l)
			}
		}
	}
	if len(alerts) < 5 {
		t.Fatalf("only %d expected alerts in the promtool tests", len(alerts))
	}
	for _, l := range am.Route.GroupBy {
		found := false
		for _, a := range alerts {
			if _, ok := a[l]; ok {
				found = true
			}
		}
		if !found {
			t.Errorf("group_by %q: no generated alert carries it", l)
		}
	}
	for _, want := range []string{"envelope", "testid", "endpoint"} {
		if !slices.Contains(am.Route.GroupBy, want) {
			t.Errorf("group_by %v lacks %q", am.Route.GroupBy, want)
		}
	}
	matches := func(ms []string, a map[string]string) bool {
		for _, m := range ms {
			sel, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + m + "}")
			if err != nil {
				t.Fatalf("matcher %q: %v", m, err)
			}
			for _, x := range sel {
				if !x.Matches(a[x.Name]) {
					return false
				}
			}
		}
		return true
	}
	if len(am.Inhibit) == 0 {
		t.Fatal("no inhibit rule")
	}
	for i, r := range am.Inhibit {
		can := false
		for _, src := range alerts {
			for _, dst := range alerts {
				if !matches(r.Source, src) || !matches(r.Target, dst) {
					continue
				}
				eq := true
				for _, l := range r.Equal {
					if v, ok := src[l]; !ok || dst[l] != v {
						eq = false
					}
				}
				if eq {
					can = true
				}
			}
		}
		if !can {
			t.Errorf("inhibit rule %d (%v → %v, equal %v) matches no pair of generated alerts", i, r.Source, r.Target, r.Equal)
		}
	}
}
