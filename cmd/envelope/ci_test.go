package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/testenv"
)

// asEnvelope is how the test binary runs as the command line itself,
// called through a link named envelope (TestCIExamples).
func asEnvelope() bool { return filepath.Base(os.Args[0]) == "envelope" }

// k6Stub stands in for k6 in the CI examples: it writes the recorded run
// K6_STUB_RUN names wherever `--out json=FILE` asks.
const k6Stub = `#!/usr/bin/env bash
set -euo pipefail
for a in "$@"; do
  case "$a" in
    json=*) cp "$K6_STUB_RUN" "${a#json=}" ;;
  esac
done
`

// ciScripts reads docs/ci.md's two YAML blocks: the GitHub workflow's
// run steps (but the install) with their ${{ }} expressions replaced,
// and the GitLab job's script lines.
func ciScripts(t *testing.T, exprs map[string]string) (github, gitlab string, uploads, reports []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fenced(string(b), "yaml")
	if len(blocks) != 2 {
		t.Fatalf("docs/ci.md has %d yaml blocks, want 2 (GitHub, GitLab)", len(blocks))
	}
	var gh struct {
		Jobs map[string]struct {
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(strings.Join(blocks[0], "\n")), &gh); err != nil {
		t.Fatal(err)
	}
	expr := regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
	subst := func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string {
			v, ok := exprs[expr.FindStringSubmatch(m)[1]]
			if !ok {
				t.Fatalf("docs/ci.md: no test value for the expression %s", m)
			}
			return v
		})
	}
	var sb strings.Builder
	for _, job := range gh.Jobs {
		for k, v := range job.Env {
			fmt.Fprintf(&sb, "export %s=%q\n", k, subst(v))
		}
		for _, s := range job.Steps {
			switch {
			case s.Uses == "actions/upload-artifact@v4":
				uploads = strings.Fields(s.With["path"])
			case s.Run != "" && s.Name != "Install envelope":
				// As GitHub runs a step: bash -e -o pipefail, one shell each.
				fmt.Fprintf(&sb, "bash -eo pipefail <<'STEP'\n%s\nSTEP\n", subst(s.Run))
			}
		}
	}
	github = "set -e\n" + sb.String()
	var gl map[string]struct {
		Script    []string `yaml:"script"`
		Artifacts struct {
			Reports struct {
				JUnit []string `yaml:"junit"`
			} `yaml:"reports"`
		} `yaml:"artifacts"`
	}
	if err := yaml.Unmarshal([]byte(strings.Join(blocks[1], "\n")), &gl); err != nil {
		t.Fatal(err)
	}
	job, ok := gl["load-test"]
	if !ok || len(job.Script) == 0 {
		t.Fatal("docs/ci.md: the GitLab block has no load-test job with a script")
	}
	return github, strings.Join(job.Script, "\n"), uploads, job.Artifacts.Reports.JUnit
}

// TestCIExamples runs docs/ci.md's GitHub Actions and GitLab CI commands
// on real recorded runs: an unchanged run passes, a run whose actor
// endpoint is 1.6× slower fails the job with a JUnit failure naming it,
// and both are recorded in the history with their commit and branch.
func TestCIExamples(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.Missing(t, "bash", "it runs docs/ci.md's CI scripts")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "envelope")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "k6"), []byte(k6Stub), 0o755); err != nil {
		t.Fatal(err)
	}
	var base []string
	for i := 1; i <= 10; i++ {
		base = append(base, fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.summary.json", i)))
	}
	for _, platform := range []string{"github", "gitlab"} {
		t.Run(platform, func(t *testing.T) {
			work := t.TempDir()
			mustRun(t, append([]string{"baseline", "--name", "checkout", "--out", filepath.Join(work, "envelopes", "checkout.yaml")}, base...)...)
			hist := filepath.Join(work, "history.db")
			job := func(run, sha, branch string) error {
				t.Helper()
				summary := filepath.Join(work, "step-summary.md")
				ref := "refs/pull/7/merge"
				if branch == "main" {
					ref = "refs/heads/main"
				}
				exprs := map[string]string{"secrets.ENVELOPE_HISTORY": hist, "github.run_id": "7", "github.run_attempt": "1",
					"github.sha": sha, "github.head_ref || github.ref_name": branch, "github.ref": ref}
				gh, gl, _, _ := ciScripts(t, exprs)
				script := gh
				if platform == "gitlab" {
					script = gl
				}
				for _, f := range []string{"compare-junit.xml", "changes-junit.xml"} {
					_ = os.Remove(filepath.Join(work, f))
				}
				cmd := exec.Command("bash", "-eo", "pipefail", "-c", script)
				cmd.Dir = work
				cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
					"K6_STUB_RUN="+fixtures.Path(t, "k6/history-v2.2.0/"+run+".ndjson.gz"),
					"GITHUB_STEP_SUMMARY="+summary, "ENVELOPE_HISTORY="+hist,
					"CI_PIPELINE_ID=9", "CI_COMMIT_SHA="+sha, "CI_COMMIT_REF_NAME="+branch, "CI_COMMIT_BRANCH="+branch, "CI_DEFAULT_BRANCH=main")
				out, err := cmd.CombinedOutput()
				if platform == "github" {
					if b, err := os.ReadFile(summary); err != nil || !strings.Contains(string(b), "### Envelope checkout") {
						t.Errorf("step summary: %v\n%s", err, b)
					}
				}
				if err != nil {
					t.Logf("%s on %s: %v\n%s", run, branch, err, out)
				}
				return err
			}
			_, _, uploads, reports := ciScripts(t, map[string]string{"secrets.ENVELOPE_HISTORY": "", "github.run_id": "", "github.run_attempt": "",
				"github.sha": "", "github.head_ref || github.ref_name": "", "github.ref": ""})
			junits := uploads
			if platform == "gitlab" {
				junits = reports
			}
			if !slices.Equal(junits, []string{"compare-junit.xml", "changes-junit.xml"}) {
				t.Fatalf("%s uploads %q, want the compare and changes JUnit files", platform, junits)
			}
			for _, tc := range []struct {
				run, sha string
				fail     bool
			}{{"run-06", "aaa111", false}, {"run-20", "bbb222", true}} {
				if failed := job(tc.run, tc.sha, "feature-x") != nil; failed != tc.fail {
					t.Fatalf("%s: job failed %v, want %v", tc.run, failed, tc.fail)
				}
				checkJUnit(t, filepath.Join(work, junits[0]), tc.fail)
				if _, err := os.Stat(filepath.Join(work, junits[1])); err == nil {
					t.Errorf("%s on a feature branch: a change-point report was written", tc.run)
				}
			}
			list := mustRun(t, "history", "--history", hist, "list", "--branch", "feature-x", "--format", "csv")
			for _, want := range []string{"run-06,aaa111,,feature-x", "run-20,bbb222,,feature-x"} {
				if !strings.Contains(list, want) {
					t.Errorf("history lacks %s:\n%s", want, list)
				}
			}

			// The main line: runs 1–14 recorded (upload ×1.2 from run 11),
			// the envelope made from runs 11–19.
			var main, after []string
			for i := 1; i <= 19; i++ {
				if i <= 14 {
					main = append(main, fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.ndjson.gz", i)))
				}
				if i >= 11 {
					after = append(after, fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.summary.json", i)))
				}
			}
			mustRun(t, append([]string{"history", "--history", hist, "record", "--branch", "main"}, main...)...)
			mustRun(t, append([]string{"baseline", "--name", "checkout", "--out", filepath.Join(work, "envelopes", "checkout.yaml")}, after...)...)
			if err := job("run-15", "ddd444", "main"); err == nil {
				t.Fatal("run 15 on main: the job passed, want it failed by the new change point")
			}
			checkJUnit(t, filepath.Join(work, junits[0]), false)
			checkChangesJUnit(t, filepath.Join(work, junits[1]), "document_upload")
			if err := job("run-16", "eee555", "main"); err != nil {
				t.Fatalf("run 16 on main: the job failed (%v), want it passed: the change was reported before", err)
			}
			checkChangesJUnit(t, filepath.Join(work, junits[1]), "")
		})
	}
}

// junitFile is what the checks read of a JUnit file: its test cases,
// the failures it declares, and the failed cases as "name: message".
type junitFile struct {
	cases, failures int
	failed          []string
}

// readJUnit parses a JUnit file as compare and history changes write it.
func readJUnit(t *testing.T, path string) junitFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Failures int `xml:"failures,attr"`
		Suite    struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	j := junitFile{cases: len(r.Suite.Cases), failures: r.Failures}
	for _, c := range r.Suite.Cases {
		if c.Failure != nil {
			j.failed = append(j.failed, c.Name+": "+c.Failure.Message)
		}
	}
	return j
}

// checkChangesJUnit parses history changes' JUnit file: failed test
// cases naming endpoint (a new regression change point in its series),
// none when endpoint is "".
func checkChangesJUnit(t *testing.T, path, endpoint string) {
	t.Helper()
	j := readJUnit(t, path)
	if j.cases < 10 || j.failures != len(j.failed) || (endpoint == "") != (len(j.failed) == 0) ||
		endpoint != "" && !strings.Contains(strings.Join(j.failed, "\n"), endpoint) {
		t.Errorf("%s: %d cases, failures %d %q, want a failure naming %q", path, j.cases, j.failures, j.failed, endpoint)
	}
}

// checkJUnit parses a JUnit file: a failure naming actor_get p95 when
// the run regressed, none otherwise.
func checkJUnit(t *testing.T, path string, regressed bool) {
	t.Helper()
	if regressed {
		checkRegressedJUnit(t, path, "actor_get p95")
		return
	}
	checkRegressedJUnit(t, path, "")
}

// checkRegressedJUnit parses compare's JUnit file: a failure naming
// figure, or none when figure is "".
func checkRegressedJUnit(t *testing.T, path, figure string) {
	t.Helper()
	regressed := figure != ""
	j := readJUnit(t, path)
	if j.cases < 4 {
		t.Errorf("%s: %d test cases", path, j.cases)
	}
	if regressed != (len(j.failed) > 0) || j.failures != len(j.failed) {
		t.Errorf("%s: failures %d %q, regressed %v", path, j.failures, j.failed, regressed)
	}
	if regressed && !strings.Contains(strings.Join(j.failed, "\n"), figure+" regressed: +") {
		t.Errorf("%s: no failure names %s: %q", path, figure, j.failed)
	}
}
