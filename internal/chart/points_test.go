package chart

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPoints draws marked points over a line and refuses points that do
// not fit the categories.
func TestPoints(t *testing.T) {
	base := Chart{Title: "p95 by commit", Categories: []string{"c1", "c2", "c3"}, Lines: []Series{{Name: "run", Values: []float64{1, 2, 3}}}}
	for _, c := range []struct {
		name string
		pts  Points
		err  string
	}{
		{"ok", Points{Name: "change", At: []int{1}, Values: []float64{2}, Shape: "triangle"}, ""},
		{"empty", Points{Name: "outlier", Shape: "cross"}, ""},
		{"lengths", Points{Name: "change", At: []int{1, 2}, Values: []float64{2}}, "2 places for 1 values"},
		{"range", Points{Name: "change", At: []int{3}, Values: []float64{2}}, "category 3 of 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := base
			ch.Points = []Points{c.pts}
			err := Render(ch, Light, filepath.Join(t.TempDir(), "p.png"))
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("got %v, want %q", err, c.err)
			}
		})
	}
}
