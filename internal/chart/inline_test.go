package chart

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"regexp"
	"testing"
)

func TestInlinePictureHoldsBothThemes(t *testing.T) {
	c := Chart{Title: "t", Categories: []string{"a", "b"}, Lines: []Series{{Name: "x", Values: []float64{1, 2}}}}
	s, err := InlinePicture(`a "quoted" alt`, c)
	if err != nil {
		t.Fatal(err)
	}
	uris := regexp.MustCompile(`data:image/png;base64,([A-Za-z0-9+/=]+)`).FindAllStringSubmatch(s, -1)
	if len(uris) != 3 { // dark source, light source, the img's fallback
		t.Fatalf("%d data URIs, want 3", len(uris))
	}
	var bgs []uint32
	for _, u := range uris[:2] {
		b, err := base64.StdEncoding.DecodeString(u[1])
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r, _, _, _ := img.At(1, 1).RGBA()
		bgs = append(bgs, r>>8)
	}
	if bgs[0] != 0x0d || bgs[1] != 0xff {
		t.Errorf("corner red channels dark=%#x light=%#x, want the dark and the light background", bgs[0], bgs[1])
	}
	if !regexp.MustCompile(`alt="a &#34;quoted&#34; alt"`).MatchString(s) {
		t.Errorf("alt text not escaped: %s", s[:80])
	}
}
