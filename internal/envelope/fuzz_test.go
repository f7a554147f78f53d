package envelope

import (
	"bytes"
	"testing"
)

// FuzzParse reads arbitrary YAML and JSON as an envelope file: Parse never
// panics, an envelope it returns validates, and a file written from it in
// either format reads back to the same file.
func FuzzParse(f *testing.F) {
	env, err := Compute(inputs(threeRuns()), Options{Name: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	for _, format := range []Format{YAML, JSON} {
		b, err := Marshal(env, format)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("apiVersion: envelope.dev/v1\nkind: Envelope\nthroughput: {n: .nan}\n"))
	f.Add([]byte(`{"apiVersion": "envelope.dev/v1", "kind": "Envelope", "runs": [{"rps": 1e999}]}`))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		env, err := Parse("fuzz.yaml", in)
		if err != nil {
			if env != nil {
				t.Fatal("an envelope with an error")
			}
			return
		}
		if errs := env.Validate(); len(errs) > 0 {
			t.Fatalf("parsed envelope does not validate: %v", errs)
		}
		// A file this package writes reads back to the same file (an
		// absent list and an empty one are the same envelope, so compare
		// the written forms, not the first decode).
		for _, format := range []Format{YAML, JSON} {
			b, err := Marshal(env, format)
			if err != nil {
				t.Fatalf("marshal %s: %v", format, err)
			}
			back, err := Parse("fuzz."+string(format), b)
			if err != nil {
				t.Fatalf("%s round trip: %v\n%s", format, err, b)
			}
			again, err := Marshal(back, format)
			if err != nil {
				t.Fatalf("marshal %s again: %v", format, err)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("%s round trip changed the file:\n%s\nwant\n%s", format, again, b)
			}
		}
	})
}
