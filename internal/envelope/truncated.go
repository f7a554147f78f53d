package envelope

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// topKeys are the envelope's top-level keys in the order the file is
// written, each with whether it is always written.
var topKeys = func() (keys []struct {
	name     string
	required bool
}) {
	t := reflect.TypeFor[Envelope]()
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		keys = append(keys, struct {
			name     string
			required bool
		}{name, !strings.Contains(opts, "omitempty")})
	}
	return keys
}()

// yamlTopKey is a top-level key of a block mapping at the start of a line.
var yamlTopKey = regexp.MustCompile(`(?m)^([a-z_]+):`)

// truncated says when a file looks cut short (a copy or a write that
// stopped part way): the keys every envelope file has stop part way
// through the written order, or a JSON object never closes. A cut file
// otherwise surfaces as a confusing type error at its last line or as
// missing fields; this names the cause and where the file ends.
func truncated(name string, b []byte, err error) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil
	}
	lines := 1 + bytes.Count(t, []byte("\n"))
	// Written files end with a newline: a failing one that stops part
	// way through a line was most likely cut there (the error is kept,
	// in case the file was only edited without a final newline).
	cut := err != nil && (strings.Contains(err.Error(), "unexpected end of stream") || !bytes.HasSuffix(b, []byte("\n")))
	if t[0] == '{' {
		if t[len(t)-1] == '}' && (err == nil || !strings.Contains(err.Error(), "unexpected EOF")) {
			return nil
		}
		return fmt.Errorf("%s: the file ends at line %d (byte %d) before its JSON object closes: it looks truncated; write the envelope again (envelope baseline)", name, lines, len(b))
	}
	present := map[string]bool{}
	for _, m := range yamlTopKey.FindAllSubmatch(t, -1) {
		present[string(m[1])] = true
	}
	last := -1
	for i, k := range topKeys {
		if present[k.name] {
			last = i
		}
	}
	if last < 0 {
		return nil // not an envelope file at all: the decoder says what it is
	}
	var missing []string
	for _, k := range topKeys[last+1:] {
		if k.required {
			missing = append(missing, k.name)
		}
	}
	if len(missing) == 0 {
		if cut {
			return fmt.Errorf("%s: the file ends at line %d inside %s: it looks truncated; write the envelope again (envelope baseline) (%v)", name, lines, topKeys[last].name, err)
		}
		return nil
	}
	for _, k := range missing {
		if present[k] {
			return nil // keys out of the written order: edited by hand, not cut
		}
	}
	return fmt.Errorf("%s: the file ends at line %d inside %s, without %s: it looks truncated; write the envelope again (envelope baseline)", name, lines, topKeys[last].name, strings.Join(missing, ", "))
}
