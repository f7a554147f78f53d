// Package page turns a report's Markdown into one self-contained HTML
// page: every image inline as a data: URI, styles and the table-sorting
// script inline, nothing fetched from anywhere, so the file can be sent
// as a CI artifact or opened offline and reads the same.
package page

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"path/filepath"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

// Status is the kind of a page's verdict; it sets the banner's colour.
type Status string

// The verdict kinds.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Info Status = "info"
)

// label is the word the banner shows before the verdict, so the kind is
// read without its colour (in print, or by a reader who cannot tell red
// from green).
func (s Status) label() (string, error) {
	switch s {
	case Pass:
		return "Pass", nil
	case Fail:
		return "Fail", nil
	case Info:
		return "Summary", nil
	}
	return "", fmt.Errorf("page status %q: want %q, %q or %q", string(s), Pass, Fail, Info)
}

// Doc is one report to render as a page.
type Doc struct {
	// Title is the page's <title>; empty, the text of the Markdown's first
	// level-1 heading.
	Title  string
	Status Status // the verdict's kind, drives the banner colour
	// Verdict is one line shown in a banner at the top: the report's
	// verdict or headline, as plain text.
	Verdict  string
	Markdown []byte
	// BaseDir is where relative image paths in Markdown are read from:
	// the folder of the Markdown file.
	BaseDir string
}

//go:embed page.css
var styleSheet string

//go:embed sort.js
var sortScript string

//go:embed page.html.tmpl
var pageTemplateText string

var pageTemplate = template.Must(template.New("page").Parse(pageTemplateText))

// markdown is GitHub-flavoured Markdown (tables, strikethrough, task
// lists, autolinks) with raw HTML passed through, which the reports use
// for their <picture> elements; headings get ids so a section can be
// linked.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
)

// Render returns the page of d: the Markdown as HTML with every relative
// image read from d.BaseDir and inlined, every table in a scrolling
// wrapper and sortable by its headers, under a banner with the verdict.
// A reference the page would have to fetch (a remote or absolute image,
// stylesheet or script) is an error naming it. The same Doc always gives
// the same bytes.
func Render(d Doc) ([]byte, error) {
	kind, err := d.Status.label()
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	if err := markdown.Convert(d.Markdown, &body); err != nil {
		return nil, fmt.Errorf("page %q: markdown: %w", d.Title, err)
	}
	inlined, heading, err := selfContained(body.Bytes(), d.BaseDir)
	if err != nil {
		return nil, fmt.Errorf("page %q: %w", cmp.Or(d.Title, heading), err)
	}
	if d.Title == "" {
		d.Title = heading
	}
	if d.Title == "" {
		return nil, fmt.Errorf("page: no title, and no level-1 heading in the Markdown to take it from")
	}
	if d.Verdict == "" {
		return nil, fmt.Errorf("page %q: no verdict line", d.Title)
	}
	// The style sheet and script are this package's own, and the body is
	// the rendered Markdown checked above: the template takes them as they
	// are, and escapes only the title and the verdict.
	var out bytes.Buffer
	err = pageTemplate.Execute(&out, struct {
		Title, Kind, Verdict string
		Status               Status
		Style                template.CSS
		Script               template.JS
		Body                 template.HTML
	}{d.Title, kind, d.Verdict, d.Status, template.CSS(styleSheet), template.JS(sortScript), template.HTML(inlined)})
	if err != nil {
		return nil, fmt.Errorf("page %q: %w", d.Title, err)
	}
	return out.Bytes(), nil
}

// WriteFile renders d and writes the page to path, creating its folder.
func WriteFile(path string, d Doc) error {
	b, err := Render(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
