// Package browser opens a self-contained HTML file in a real headless
// Chromium (Debian's chromium, driven over the DevTools protocol with
// chromedp) and reports what a reader's browser does with it: console
// errors, requests beyond the file, images and their sizes, the visible
// text, and full-page screenshots in the light and the dark colour
// scheme. Inspect only reports; Check judges the report for a test.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Options for a page check.
type Options struct {
	Texts         []string // must appear in the page's visible text (e.g. the verdict)
	ScreenshotDir string   // if set, write <Name>-light.png and <Name>-dark.png there
	Name          string   // "" names the screenshots after the file (report.html: report-light.png)
	Width, Height int      // viewport; 0 gives 1280x900
}

// Result is what the browser did with a page.
type Result struct {
	ConsoleErrors []string // console.error calls, uncaught exceptions, log entries of level error
	Requests      []string // every request whose URL is not the file itself and not a data: URI
	Images        []Image  // every img (and svg) with its natural and laid-out size
	Light, Dark   []byte   // full-page PNG screenshots with prefers-color-scheme light and dark
	Text          string   // the body's innerText
}

// Image is one img or svg element of a page: its source (the tag name
// for an inline svg), its decoded size (an svg's is its laid-out size),
// its laid-out size in CSS pixels, and whether the browser finished
// loading it.
type Image struct {
	Src                         string
	NaturalWidth, NaturalHeight float64
	Width, Height               float64
	Complete                    bool
}

// Default viewport, a laptop screen.
const (
	defaultWidth  = 1280
	defaultHeight = 900
)

// EnvChromium names the browser binary to use instead of the one on PATH.
const EnvChromium = "ENVELOPE_CHROMIUM"

// Find returns the browser: $ENVELOPE_CHROMIUM when set, else chromium
// or chromium-browser on PATH.
func Find() (string, bool) {
	if p := os.Getenv(EnvChromium); p != "" {
		return p, true
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// ErrNoBrowser is returned by Inspect when Find finds no browser.
var ErrNoBrowser = errors.New("no chromium: install Debian's chromium or set " + EnvChromium)

// flags start Chromium headless and quiet, also as root in a container:
// no sandbox (it refuses to run as root otherwise), no GPU, no QUIC, no
// first-run, sync, update or background traffic. Every host name
// resolves to nothing, so a page that reaches for the network shows the
// request (the tests count it) without the test depending on a network.
var flags = []chromedp.ExecAllocatorOption{
	chromedp.Flag("headless", "new"),
	chromedp.Flag("no-sandbox", true),
	chromedp.Flag("disable-gpu", true),
	chromedp.Flag("disable-quic", true),
	chromedp.NoFirstRun,
	chromedp.NoDefaultBrowserCheck,
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("disable-default-apps", true),
	chromedp.Flag("disable-extensions", true),
	chromedp.Flag("disable-dev-shm-usage", true),
	chromedp.Flag("hide-scrollbars", true),
	chromedp.Flag("mute-audio", true),
	chromedp.Flag("force-color-profile", "srgb"),
	chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
}

// imagesJS lists every img and svg with its sizes. An svg element has no
// natural size: its laid-out size stands in for it. An svg inside
// another svg is part of its parent's drawing and is left out.
const imagesJS = `Array.from(document.querySelectorAll('img, svg')).filter(e => !(e.tagName.toLowerCase() === 'svg' && e.parentElement && e.parentElement.closest('svg'))).map(e => {
  const r = e.getBoundingClientRect();
  const img = e.tagName.toLowerCase() === 'img';
  return {
    Src: img ? (e.currentSrc || e.getAttribute('src') || '') : 'svg',
    NaturalWidth: img ? e.naturalWidth : r.width,
    NaturalHeight: img ? e.naturalHeight : r.height,
    Width: r.width,
    Height: r.height,
    Complete: img ? e.complete : true,
  };
})`

// settleJS waits until every image has decoded (or failed to) and two
// frames have been drawn, so a screenshot shows the page as a reader
// sees it, also after a colour-scheme change swaps a <picture>'s source.
const settleJS = `Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null)))
  .then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))))
  .then(() => true)`

// Inspect opens the HTML file at htmlPath in a fresh headless Chromium
// and reports what happened, without judging it. It fails when no
// browser is found (ErrNoBrowser), when the browser does not start, or
// when the page cannot be loaded; ctx bounds the whole run.
func Inspect(ctx context.Context, htmlPath string, o Options) (Result, error) {
	exe, ok := Find()
	if !ok {
		return Result{}, ErrNoBrowser
	}
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return Result{}, err
	}
	if _, err := os.Stat(abs); err != nil {
		return Result{}, fmt.Errorf("page: %w", err)
	}
	page := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	w, h := o.Width, o.Height
	if w <= 0 || h <= 0 {
		w, h = defaultWidth, defaultHeight
	}
	profile, err := os.MkdirTemp("", "envelope-chromium-")
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = os.RemoveAll(profile) }()

	var out lockedBuffer
	opts := append(append([]chromedp.ExecAllocatorOption{}, flags...),
		chromedp.ExecPath(exe), chromedp.UserDataDir(profile), chromedp.WindowSize(w, h), chromedp.CombinedOutput(&out))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	r := Result{}
	var mu sync.Mutex
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				r.ConsoleErrors = append(r.ConsoleErrors, "console."+string(e.Type)+": "+argsText(e.Args))
			}
		case *runtime.EventExceptionThrown:
			r.ConsoleErrors = append(r.ConsoleErrors, "uncaught: "+exceptionText(e.ExceptionDetails))
		case *log.EventEntryAdded:
			if e.Entry != nil && e.Entry.Level == log.EntryLevelError {
				r.ConsoleErrors = append(r.ConsoleErrors, strings.TrimSpace(fmt.Sprintf("%s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)))
			}
		case *network.EventRequestWillBeSent:
			if e.Request != nil && !isPage(e.Request.URL, abs) && !strings.HasPrefix(e.Request.URL, "data:") {
				r.Requests = append(r.Requests, e.Request.URL)
			}
		}
	}); err != nil {
		return Result{}, started(err, &out)
	}

	scheme := func(s string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}},
			})
			return err
		})
	}
	enable := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, log.Enable, cdp.Empty{})
		return err
	})
	if err := chromedp.Do(bctx, enable, chromedp.EmulateViewport(int64(w), int64(h)), chromedp.Navigate(page)); err != nil {
		return Result{}, fmt.Errorf("opening %s: %w", htmlPath, started(err, &out))
	}
	// The images, settled, and a screenshot in each scheme; the dark
	// scheme may swap a <picture>'s source, so its images are listed
	// again and those it changed are added.
	shot := func(name string) ([]Image, []byte, error) {
		if err := chromedp.Do(bctx, scheme(name)); err != nil {
			return nil, nil, fmt.Errorf("%s: %s scheme: %w", htmlPath, name, err)
		}
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](settleJS, chromedp.EvalAwaitPromise)); err != nil {
			return nil, nil, fmt.Errorf("%s: waiting for the images (%s): %w", htmlPath, name, err)
		}
		images, err := chromedp.Run(bctx, chromedp.Evaluate[[]Image](imagesJS))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: listing images (%s): %w", htmlPath, name, err)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s screenshot: %w", htmlPath, name, err)
		}
		return images, png, nil
	}
	images, light, err := shot("light")
	if err != nil {
		return Result{}, err
	}
	text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return Result{}, fmt.Errorf("%s: reading the text: %w", htmlPath, err)
	}
	darkImages, dark, err := shot("dark")
	if err != nil {
		return Result{}, err
	}
	for i, im := range darkImages {
		if i >= len(images) || im.Src != images[i].Src {
			images = append(images, im)
		}
	}

	mu.Lock()
	res := Result{
		ConsoleErrors: append([]string(nil), r.ConsoleErrors...),
		Requests:      append([]string(nil), r.Requests...),
		Images:        images,
		Light:         light,
		Dark:          dark,
		Text:          text,
	}
	mu.Unlock()
	if o.ScreenshotDir != "" {
		name := o.Name
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
		}
		if err := writeScreenshots(o.ScreenshotDir, name, res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// isPage says whether a request's URL is the page's own file.
func isPage(raw, abs string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "file" && filepath.FromSlash(u.Path) == abs
}

// writeScreenshots writes <name>-light.png and <name>-dark.png into dir.
func writeScreenshots(dir, name string, r Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for scheme, png := range map[string][]byte{"light": r.Light, "dark": r.Dark} {
		if err := os.WriteFile(filepath.Join(dir, name+"-"+scheme+".png"), png, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// argsText is a console call's arguments as the console prints them:
// strings as they are, other values by their JSON or description.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		parts = append(parts, objectText(a))
	}
	return strings.Join(parts, " ")
}

func objectText(a *runtime.RemoteObject) string {
	if a == nil {
		return ""
	}
	if len(a.Value) > 0 {
		var s string
		if json.Unmarshal(a.Value, &s) == nil {
			return s
		}
		return string(a.Value)
	}
	if a.UnserializableValue != "" {
		return string(a.UnserializableValue)
	}
	return a.Description
}

// exceptionText is an uncaught exception's message and where it was
// thrown.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "exception"
	}
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d:%d)", msg, d.URL, d.LineNumber+1, d.ColumnNumber+1)
}

// started adds the browser's own output to an error from its start, so a
// browser that does not start says why.
func started(err error, out *lockedBuffer) error {
	if s := strings.TrimSpace(out.String()); s != "" {
		return fmt.Errorf("%w\nchromium said:\n%s", err, s)
	}
	return err
}

// lockedBuffer collects the browser's output, written from another
// goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
