package cmdline

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/alecthomas/kingpin/v2"
)

// kingpin's messages for a misspelt flag or command.
var (
	unknownFlag    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown long flag '--(.+)'$`) })
	unknownCommand = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^expected command but got "(.+)"$`) })
)

// explainParseError adds to a command-line error what kingpin leaves
// out: the closest flag or command to a misspelt one ("did you mean"),
// and the flag or argument a value that does not parse was given to.
func explainParseError(app *kingpin.Application, args []string, err error) error {
	ctx, _ := app.ParseContext(args)
	msg := err.Error()
	if m := unknownFlag().FindStringSubmatch(msg); m != nil {
		var names []string
		for _, f := range app.Model().Flags {
			names = append(names, f.Name)
		}
		if ctx != nil && ctx.SelectedCommand != nil {
			for _, f := range ctx.SelectedCommand.Model().Flags {
				names = append(names, f.Name)
			}
		}
		name, _, _ := strings.Cut(m[1], "=")
		if s := closest(name, names); s != "" {
			return fmt.Errorf("%s; did you mean --%s?", msg, s)
		}
		return err
	}
	if m := unknownCommand().FindStringSubmatch(msg); m != nil {
		cmds := app.Model().Commands
		if ctx != nil && ctx.SelectedCommand != nil {
			cmds = ctx.SelectedCommand.Model().Commands
		}
		var names []string
		for _, c := range cmds {
			if !c.Hidden {
				names = append(names, c.Name)
			}
		}
		if s := closest(m[1], names); s != "" {
			return fmt.Errorf("%s; did you mean %q?", msg, s)
		}
		return err
	}
	if ctx == nil || kingpinMissing().MatchString(msg) {
		return err // a missing file has its own message
	}
	// A value that does not parse: find whose it is by setting each
	// again (this app is thrown away after one parse).
	for _, e := range ctx.Elements {
		if e.Value == nil {
			continue
		}
		var name string
		var v kingpin.Value
		switch c := e.Clause.(type) {
		case *kingpin.FlagClause:
			name, v = "--"+c.Model().Name, c.Model().Value
		case *kingpin.ArgClause:
			name, v = c.Model().Name, c.Model().Value
		default:
			continue
		}
		if serr := v.Set(*e.Value); serr != nil && serr.Error() == msg {
			hint := ""
			if strings.Contains(msg, "missing unit in duration") {
				hint = " (give a unit: 3m, 90s, 1h)"
			}
			return fmt.Errorf("%s %q: %w%s", name, *e.Value, err, hint)
		}
	}
	return err
}

// closest is the candidate nearest to s in edit distance, when it is
// near enough to be a slip (at most 2 edits, or 1 for short names), or a
// candidate s is a prefix of; "" when none is.
func closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	limit := 2
	if len(s) <= 4 {
		limit = 1
	}
	for _, c := range candidates {
		d := editDistance(s, c)
		if d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= limit {
		return best
	}
	for _, c := range candidates {
		if len(s) >= 3 && strings.HasPrefix(c, s) {
			return c
		}
	}
	return ""
}

// editDistance is the Levenshtein distance, with a transposition of two
// neighbours counted as one edit (warmpu → warmup).
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range y {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
