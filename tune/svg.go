package tune

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// WriteCurveSVG plots throughput and p95 time to first token against
// batch size (the knee's window, the highest load), the knee marked.
func (r Report) WriteCurveSVG(w io.Writer) error {
	const W, H, L, R, T, B = 640.0, 360.0, 60.0, 60.0, 30.0, 40.0
	if len(r.Curve) < 2 {
		return fmt.Errorf("tune: %d points to plot", len(r.Curve))
	}
	lx := func(s int) float64 { return math.Log2(float64(s)) }
	x0, x1 := lx(r.Curve[0].Size), lx(r.Curve[len(r.Curve)-1].Size)
	tmax, lmax := 0.0, 0.0
	for _, c := range r.Curve {
		tmax, lmax = max(tmax, c.TokensPerSec), max(lmax, c.TTFT.P95)
	}
	px := func(s int) float64 { return L + (lx(s)-x0)/(x1-x0)*(W-L-R) }
	py := func(v, top float64) float64 { return H - B - v/max(top, 1e-9)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%g" y="18">throughput (blue, tok/s) and p95 TTFT (red) by batch size; window %v, %d clients</text>`+"\n",
		L, r.KneeAt.Window, r.topLoad())
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", L, H-B, W-R, H-B)
	line := func(color string, val func(Result) float64, top float64) {
		var pts []string
		for _, c := range r.Curve {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(c.Size), py(val(c), top)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(c.Size), py(val(c), top), color)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
	}
	line("steelblue", func(c Result) float64 { return c.TokensPerSec }, tmax)
	line("firebrick", func(c Result) float64 { return c.TTFT.P95 }, lmax)
	for _, c := range r.Curve {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%d</text>`+"\n", px(c.Size), H-B+16, c.Size)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" fill="steelblue">%.0f tok/s</text>`+"\n", 4.0, T+10, tmax)
	fmt.Fprintf(&b, `<text x="%g" y="%g" fill="firebrick" text-anchor="end">%s</text>`+"\n", W-4, T+10, ms(lmax))
	if r.KneeAt.Size > 0 {
		x := px(r.KneeAt.Size)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="gray" stroke-dasharray="4 3"/>`+"\n", x, T, x, H-B)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" fill="gray">knee: %d</text>`+"\n", x+4, T+24, r.KneeAt.Size)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHeatmapSVG draws throughput over batch size x window at the
// highest load, each cell coloured by utilisation (darker is busier).
func (r Report) WriteHeatmapSVG(w io.Writer) error {
	loads, settings := axes(r.Results)
	if len(loads) == 0 {
		return fmt.Errorf("tune: nothing to draw")
	}
	top := loads[len(loads)-1]
	var sizes []int
	windows := uniqueWindows(settings)
	for _, s := range settings {
		if s.Window == windows[0] {
			sizes = append(sizes, s.Size)
		}
	}
	const cw, ch, L, T = 90.0, 40.0, 80.0, 50.0
	W, H := L+cw*float64(len(sizes))+20, T+ch*float64(len(windows))+30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%g" y="18">tok/s by batch size (columns) and window (rows), %d clients; darker: higher utilisation</text>`+"\n", 8.0, top)
	for i, s := range sizes {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%d</text>`+"\n", L+cw*(float64(i)+0.5), T-8, s)
	}
	for j, win := range windows {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end">%v</text>`+"\n", L-6, T+ch*(float64(j)+0.6), win)
		for i, s := range sizes {
			for _, x := range r.Results {
				if x.Size != s || x.Window != win || x.Concurrency != top {
					continue
				}
				shade := int(235 - 170*min(1, max(0, x.Utilization)))
				fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="rgb(%d,%d,255)" stroke="white"/>`+"\n",
					L+cw*float64(i), T+ch*float64(j), cw, ch, shade, shade)
				fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%.0f</text>`+"\n", L+cw*(float64(i)+0.5), T+ch*(float64(j)+0.6), x.TokensPerSec)
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFiles prints the table and the TOML fragment (headed by what) to
// w and writes tune.toml, throughput.svg and heatmap.svg under dir.
func (r Report) WriteFiles(w io.Writer, dir, what string) error {
	r.WriteTable(w)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var frag strings.Builder
	r.WriteTOML(&frag, what)
	fmt.Fprintf(w, "\n%s", frag.String())
	for name, write := range map[string]func(io.Writer) error{
		"tune.toml":      func(f io.Writer) error { _, err := io.WriteString(f, frag.String()); return err },
		"throughput.svg": r.WriteCurveSVG,
		"heatmap.svg":    r.WriteHeatmapSVG,
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := errors.Join(write(f), f.Close()); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "wrote %s/{tune.toml,throughput.svg,heatmap.svg}\n", dir)
	return nil
}
