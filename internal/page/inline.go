package page

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// selfContained parses the rendered body and returns it with every
// relative image inlined from baseDir as a data: URI, every table in a
// scrolling wrapper with its number cells marked, a <picture>'s source
// that repeats its <img> dropped, and the dark chart variant limited to
// the screen (a printed page takes the light one). Any other reference the browser
// would fetch is an error: remote or absolute addresses anywhere, and
// relative ones outside <img> and <source>. Links (<a href>) are left as
// they are: following one is the reader's choice. heading is the text of
// the first <h1>.
func selfContained(body []byte, baseDir string) (page []byte, heading string, err error) {
	ctx := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(bytes.NewReader(body), ctx)
	if err != nil {
		return nil, "", fmt.Errorf("parse the rendered HTML: %w", err)
	}
	// The nodes hang under one root, so a top-level table has a parent to
	// be wrapped in.
	root := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	for _, n := range nodes {
		root.AppendChild(n)
	}
	in := &inliner{baseDir: baseDir, uris: map[string]string{}}
	if err := in.walk(root); err != nil {
		return nil, "", err
	}
	var out bytes.Buffer
	for n := root.FirstChild; n != nil; n = n.NextSibling {
		if err := html.Render(&out, n); err != nil {
			return nil, "", err
		}
	}
	return out.Bytes(), in.heading, nil
}

// inliner rewrites one page; uris caches each file's data: URI, since a
// chart's light variant is named twice in its <picture>.
type inliner struct {
	baseDir string
	uris    map[string]string
	heading string // the first <h1>'s text
}

// fetching are the attributes whose value the browser loads on its own;
// href is one too, except on a link.
var fetching = map[string]bool{"src": true, "srcset": true, "poster": true, "data": true, "background": true}

func (in *inliner) walk(n *html.Node) error {
	if n.Type == html.ElementNode {
		if err := in.element(n); err != nil {
			return err
		}
		if n.DataAtom == atom.H1 && in.heading == "" {
			in.heading = strings.Join(strings.Fields(text(n)), " ")
		}
	}
	// The next sibling is taken first: wrapping a table moves it.
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if err := in.walk(c); err != nil {
			return err
		}
		c = next
	}
	switch {
	case n.Type != html.ElementNode:
	case n.DataAtom == atom.Table:
		wrapTable(n)
	case n.DataAtom == atom.Picture:
		dropFallbackSources(n)
	case n.DataAtom == atom.Td && numeric.MatchString(text(n)):
		n.Attr = append(n.Attr, html.Attribute{Key: "class", Val: "num"})
	}
	return nil
}

// numeric matches a cell that starts with a figure ("6.67 ms", "+1.7%",
// "[-2.1, +0.4]"): the page keeps such a cell on one line, so a narrow
// screen scrolls the table rather than break a number from its unit.
var numeric = regexp.MustCompile(`^\s*[\[(]?[+\-\x{2212}]?\d`)

// dropFallbackSources removes a <picture>'s <source> that offers the
// same image as its <img>: the <img> is what the browser shows when no
// other source matches, so the page carries that image once less.
func dropFallbackSources(p *html.Node) {
	var img string
	for c := p.FirstChild; c != nil; c = c.NextSibling {
		if c.DataAtom == atom.Img {
			img = attr(c, "src")
		}
	}
	if img == "" {
		return
	}
	for c := p.FirstChild; c != nil; {
		next := c.NextSibling
		if c.DataAtom == atom.Source && attr(c, "srcset") == img {
			p.RemoveChild(c)
		}
		c = next
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// element checks and rewrites one element's attributes.
func (in *inliner) element(n *html.Node) error {
	image := n.DataAtom == atom.Img || n.DataAtom == atom.Source
	if n.DataAtom == atom.Style {
		var css strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			css.WriteString(c.Data)
		}
		if err := checkCSS("<style>", css.String()); err != nil {
			return err
		}
	}
	for i, a := range n.Attr {
		key := strings.ToLower(a.Key)
		where := fmt.Sprintf("<%s %s=%q>", n.Data, key, a.Val)
		switch {
		case key == "style":
			if err := checkCSS(where, a.Val); err != nil {
				return err
			}
		case key == "srcset":
			v, err := in.srcset(where, a.Val, image)
			if err != nil {
				return err
			}
			n.Attr[i].Val = v
		case fetching[key], key == "href" && n.DataAtom != atom.A && n.DataAtom != atom.Area:
			v, err := in.resolve(where, a.Val, image)
			if err != nil {
				return err
			}
			n.Attr[i].Val = v
		case key == "media" && n.DataAtom == atom.Source && strings.Contains(a.Val, "prefers-color-scheme: dark") && !strings.HasPrefix(a.Val, "screen"):
			n.Attr[i].Val = "screen and " + a.Val
		}
	}
	return nil
}

// resolve is the value a fetched address becomes: a data: URI as it is,
// a relative image path as the file's data: URI; anything else is an
// error saying where it is.
func (in *inliner) resolve(where, ref string, image bool) (string, error) {
	ref = strings.TrimSpace(ref)
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("%s: not an address: %w", where, err)
	}
	switch {
	case strings.EqualFold(u.Scheme, "data"):
		return ref, nil
	case u.Scheme != "" || u.Host != "" || strings.HasPrefix(ref, "//"):
		return "", fmt.Errorf("%s: %s is a remote or absolute address; the page must load nothing beyond itself", where, ref)
	case strings.HasPrefix(u.Path, "/"):
		return "", fmt.Errorf("%s: %s is an absolute path; give images relative to the Markdown's folder", where, ref)
	case u.Path == "":
		return "", fmt.Errorf("%s: an empty address", where)
	case !image:
		return "", fmt.Errorf("%s: only images (<img src>, <source srcset>) are inlined; the page would fetch %s", where, ref)
	}
	return in.dataURI(where, u.Path)
}

// dataURI reads the image at rel (a slash path under baseDir) and encodes
// it, its type from the extension, else from its first bytes.
func (in *inliner) dataURI(where, rel string) (string, error) {
	file := filepath.Join(in.baseDir, filepath.FromSlash(rel))
	if s, ok := in.uris[file]; ok {
		return s, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: read the image: %w", where, err)
	}
	typ, err := imageType(rel, b)
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", where, file, err)
	}
	s := "data:" + typ + ";base64," + base64.StdEncoding.EncodeToString(b)
	in.uris[file] = s
	return s, nil
}

// imageTypes are the media types of the image files a page inlines, by
// extension.
var imageTypes = map[string]string{
	".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp",
}

func imageType(name string, b []byte) (string, error) {
	if t, ok := imageTypes[strings.ToLower(path.Ext(name))]; ok {
		return t, nil
	}
	if t := http.DetectContentType(b); strings.HasPrefix(t, "image/") {
		return t, nil
	}
	head := bytes.TrimSpace(b[:min(len(b), 512)])
	if bytes.HasPrefix(head, []byte("<svg")) || bytes.HasPrefix(head, []byte("<?xml")) && bytes.Contains(b, []byte("<svg")) {
		return "image/svg+xml", nil
	}
	return "", fmt.Errorf("not a PNG, SVG, JPEG, GIF or WebP image")
}

// srcset resolves each candidate of a srcset ("a.png 1x, b.png 2x"). A
// data: URI holds commas, so candidates are split as browsers split them:
// the address runs to the next whitespace, and a descriptor list to the
// next comma.
func (in *inliner) srcset(where, v string, image bool) (string, error) {
	var out []string
	s := v
	for {
		s = strings.TrimLeft(s, " \t\n\r\f,")
		if s == "" {
			break
		}
		end := strings.IndexAny(s, " \t\n\r\f")
		if end < 0 {
			end = len(s)
		}
		ref := s[:end]
		s = s[end:]
		desc := ""
		if trimmed := strings.TrimRight(ref, ","); trimmed != ref {
			ref = trimmed
		} else if c := strings.IndexByte(s, ','); c >= 0 {
			desc, s = strings.TrimSpace(s[:c]), s[c+1:]
		} else {
			desc, s = strings.TrimSpace(s), ""
		}
		r, err := in.resolve(where, ref, image)
		if err != nil {
			return "", err
		}
		if desc != "" {
			r += " " + desc
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return "", fmt.Errorf("%s: no image in the srcset", where)
	}
	return strings.Join(out, ", "), nil
}

// cssFetch finds what CSS would load: an @import, or a url() that is not
// a data: URI.
var cssFetch = regexp.MustCompile(`(?i)@import|url\(\s*['"]?\s*([^'")\s]*)`)

func checkCSS(where, css string) error {
	for _, m := range cssFetch.FindAllStringSubmatch(css, -1) {
		if strings.EqualFold(m[0], "@import") || !strings.HasPrefix(strings.ToLower(m[1]), "data:") {
			return fmt.Errorf("%s: the style loads %s; the page must load nothing beyond itself", where, strings.TrimSpace(m[0]))
		}
	}
	return nil
}

// wrapTable puts a table in a <div class="table-wrap">, which scrolls
// sideways on a narrow screen instead of widening the page.
func wrapTable(t *html.Node) {
	p := t.Parent
	if p == nil || p.DataAtom == atom.Div && hasClass(p, "table-wrap") {
		return
	}
	wrap := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div, Attr: []html.Attribute{{Key: "class", Val: "table-wrap"}}}
	p.InsertBefore(wrap, t)
	p.RemoveChild(t)
	wrap.AppendChild(t)
}

func hasClass(n *html.Node, class string) bool {
	for _, a := range n.Attr {
		if a.Key == "class" && strings.Contains(" "+a.Val+" ", " "+class+" ") {
			return true
		}
	}
	return false
}

// text is the text inside n.
func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
	}
	return b.String()
}
