package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// commandMention is a command line in code: envelope or exporter, a
// command, and a word that may be its subcommand (ecs record, history
// show), where a shell would run it: at the start of the code, after a
// pipe, `&&`, `;`, a prompt, a YAML list item or `run:`, or as a path
// (go run ./cmd/envelope demo).
var commandMention = regexp.MustCompile(`(?:^\s*(?:\$ |- |run: )?|[|&;]\s*|cmd/)(envelope|exporter) ([a-z][a-z0-9-]*)(?: ([a-z][a-z0-9-]*))?`)

// shellComment is a comment at the end of a code line.
var shellComment = regexp.MustCompile(`(^|\s)#.*$`)

// docsCode returns the code of a Markdown file: its fenced and indented
// blocks' lines, without comments, and its inline code spans, which may
// run across the lines of a paragraph.
func docsCode(text string) []string {
	var code []string
	var para []string
	flush := func() {
		parts := strings.Split(strings.Join(para, " "), "`")
		for i := 1; i < len(parts); i += 2 {
			code = append(code, parts[i])
		}
		para = nil
	}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "```"):
			flush()
			fenced = !fenced
		case fenced || strings.HasPrefix(l, "    ") && len(para) == 0:
			code = append(code, shellComment.ReplaceAllString(l, ""))
		case strings.TrimSpace(l) == "":
			flush()
		default:
			para = append(para, l)
		}
	}
	flush()
	return code
}

// Every command line the README and docs/ show names a command that
// exists, in the command that has it: `envelope compare`, never the
// exporter's, and `exporter serve`, never envelope's. benchmarks.md is
// left out: it records the commands as they were when each figure was
// measured.
func TestDocsNameExistingCommands(t *testing.T) {
	files := []string{filepath.Join("..", "..", "README.md"), filepath.Join("..", "..", "deploy", "ecs", "README.md")}
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range docs {
		if filepath.Base(f) != "benchmarks.md" {
			files = append(files, f)
		}
	}
	mentions := map[string][]string{} // "exporter serve" → files
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, code := range docsCode(string(b)) {
			for _, m := range commandMention.FindAllStringSubmatch(code, -1) {
				key := strings.TrimSpace(strings.Join(m[1:], " "))
				if !slices.Contains(mentions[key], f) {
					mentions[key] = append(mentions[key], f)
				}
			}
		}
	}
	model := newApp(io.Discard, io.Discard).Model()
	seen := map[string]bool{}
	for key, where := range mentions {
		words := strings.Fields(key)
		seen[words[0]] = true
		var ok bool
		switch words[0] {
		case "envelope":
			ok = hasCommand(model, words[1:])
		case "exporter":
			ok = exec.Command(buildExporter(t), append([]string{"help"}, exporterPath(t, words[1:])...)...).Run() == nil
		}
		if !ok {
			t.Errorf("%s: %q names no command", strings.Join(where, ", "), key)
		}
	}
	if !seen["envelope"] || !seen["exporter"] {
		t.Errorf("found commands of %v only in the docs", seen)
	}
}

// hasCommand reports whether words name a command of the app: the first
// a command, the second (when the first has subcommands) one of those.
func hasCommand(app *kingpin.ApplicationModel, words []string) bool {
	if words[0] == "help" {
		return true
	}
	for _, c := range app.Commands {
		if c.Name != words[0] {
			continue
		}
		if len(c.Commands) == 0 || len(words) < 2 {
			return true
		}
		for _, s := range c.Commands {
			if s.Name == words[1] {
				return true
			}
		}
		return false
	}
	return false
}

// exporterPath is the command path `exporter help` is asked about: the
// second word only after a command group (ecs).
func exporterPath(t *testing.T, words []string) []string {
	t.Helper()
	if words[0] == "ecs" || len(words) < 2 {
		return words
	}
	return words[:1]
}
