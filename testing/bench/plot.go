package main

import (
	"fmt"
	"os"
	"strings"
)

// writePlot draws throughput, batch size and p95 latency over time, one line
// per mode, as a self-contained SVG (no plotting dependency).
func writePlot(path string, order []string, res map[string]modeResult) error {
	const w, h, pad, panelH = 900, 720, 60, 200
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"}
	panels := []struct {
		title string
		get   func(point) float64
	}{
		{"throughput (tokens/s)", func(p point) float64 { return p.TokS }},
		{"batch size (sequences per step)", func(p point) float64 { return p.BatchSize }},
		{"p95 end-to-end latency of requests ending (s)", func(p point) float64 { return p.P95Latency }},
	}
	var tmax float64
	for _, name := range order {
		for _, p := range res[name].Series {
			tmax = max(tmax, p.T)
		}
	}
	if tmax == 0 {
		tmax = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	for i, pn := range panels {
		top := float64(pad/2 + i*(panelH+30))
		var ymax float64
		for _, name := range order {
			for _, p := range res[name].Series {
				ymax = max(ymax, pn.get(p))
			}
		}
		if ymax == 0 {
			ymax = 1
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.0f">%s (max %.3g)</text>`+"\n", pad, top-5, pn.title, ymax)
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", pad, top, w-2*pad, panelH)
		for j, name := range order {
			var pts []string
			for _, p := range res[name].Series {
				x := float64(pad) + p.T/tmax*float64(w-2*pad)
				y := top + float64(panelH) - pn.get(p)/ymax*float64(panelH)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n",
				colors[j%len(colors)], strings.Join(pts, " "))
		}
	}
	for j, name := range order {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", pad+j*140, h-10, colors[j%len(colors)], name)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">time (s), 0 to %.0f</text>`+"\n", w-pad-150, h-10, tmax)
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
