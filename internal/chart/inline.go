package chart

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
)

// InlinePicture is Picture with both themes' PNGs inside it as data:
// URIs, for a page that must stand alone (no file beside it, no
// network): the dark variant in dark mode, the light one otherwise.
func InlinePicture(alt string, c Chart) (string, error) {
	var uris [2]string
	for i, t := range []Theme{Light, Dark} {
		var b bytes.Buffer
		if err := WritePNG(&b, c, t); err != nil {
			return "", err
		}
		uris[i] = "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
	}
	return fmt.Sprintf("<picture>\n  <source media=\"(prefers-color-scheme: dark)\" srcset=\"%s\">\n  <source media=\"(prefers-color-scheme: light)\" srcset=\"%s\">\n  <img alt=\"%s\" src=\"%s\">\n</picture>\n",
		uris[1], uris[0], html.EscapeString(alt), uris[0]), nil
}
