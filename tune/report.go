package tune

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Objective is a channel's latency objectives (p95).
type Objective struct {
	Channel   string
	TTFT, ITL time.Duration // 0: none
}

// Setting is a batch size and window.
type Setting struct {
	Size   int
	Window time.Duration
}

// Pick is the recommendation for one channel.
type Pick struct {
	Objective
	Setting
	TokensPerSec float64 // at the highest load
	Met          bool    // its objectives held at every load
	Why          string
}

// Report is the tuning's outcome.
type Report struct {
	Results []Result
	Knee    Knee
	KneeAt  Setting // the knee's batch size, on the best window's curve at the highest load
	Curve   []Result
	Picks   []Pick
	// Engine is the setting for [engine]: the pick of the strictest
	// channel whose objectives some setting meets (realtime first).
	Engine Pick
}

// Recommend finds the knee and each channel's pick: the setting that
// meets the channel's p95 objectives at every load with the most
// throughput at the highest load (none meets them: the one with the lowest
// p95 TTFT at the highest load, and says so).
func Recommend(results []Result, objectives []Objective) Report {
	r := Report{Results: results}
	loads, settings := axes(results)
	top := loads[len(loads)-1]
	at := func(s Setting, load int) (Result, bool) {
		for _, x := range results {
			if x.Size == s.Size && x.Window == s.Window && x.Concurrency == load {
				return x, true
			}
		}
		return Result{}, false
	}
	// The knee, on the window with the most throughput summed over sizes.
	bestW, bestSum := time.Duration(0), -1.0
	for _, w := range uniqueWindows(settings) {
		sum := 0.0
		for _, s := range settings {
			if x, ok := at(s, top); ok && s.Window == w {
				sum += x.TokensPerSec
			}
		}
		if sum > bestSum {
			bestW, bestSum = w, sum
		}
	}
	var pts []Point
	for _, s := range settings {
		if x, ok := at(s, top); ok && s.Window == bestW {
			r.Curve = append(r.Curve, x)
			pts = append(pts, Point{float64(s.Size), x.TokensPerSec})
		}
	}
	r.Knee = FindKnee(pts)
	if r.Knee.Chosen >= 0 {
		r.KneeAt = Setting{r.Curve[r.Knee.Chosen].Size, bestW}
	}
	for _, o := range objectives {
		p, bestTTFT := Pick{Objective: o}, 0.0
		for _, s := range settings {
			x, ok := at(s, top)
			if !ok {
				continue
			}
			met := true
			for _, l := range loads {
				y, ok := at(s, l)
				met = met && ok && (o.TTFT == 0 || y.TTFT.P95 <= o.TTFT.Seconds()) && (o.ITL == 0 || y.ITL.P95 <= o.ITL.Seconds())
			}
			switch {
			case met && (!p.Met || x.TokensPerSec > p.TokensPerSec), // the most throughput of those that meet it
				!met && !p.Met && (p.Size == 0 || x.TTFT.P95 < bestTTFT): // else the lowest p95 TTFT
				p.Setting, p.TokensPerSec, p.Met, bestTTFT = s, x.TokensPerSec, met, x.TTFT.P95
			}
		}
		p.Why = "meets its p95 objectives at every load with the most throughput"
		if !p.Met {
			p.Why = "no setting meets its p95 objectives at every load: the lowest p95 time to first token"
		}
		r.Picks = append(r.Picks, p)
	}
	for _, p := range r.Picks {
		if p.Met {
			r.Engine = p
			break
		}
	}
	if r.Engine.Size == 0 && len(r.Picks) > 0 {
		r.Engine = r.Picks[len(r.Picks)-1]
	}
	return r
}

func axes(results []Result) ([]int, []Setting) {
	var loads []int
	var settings []Setting
	for _, x := range results {
		if !slices.Contains(loads, x.Concurrency) {
			loads = append(loads, x.Concurrency)
		}
		if s := (Setting{x.Size, x.Window}); !slices.Contains(settings, s) {
			settings = append(settings, s)
		}
	}
	slices.Sort(loads)
	slices.SortFunc(settings, func(a, b Setting) int {
		if a.Window != b.Window {
			return int(a.Window - b.Window)
		}
		return a.Size - b.Size
	})
	return loads, settings
}

func uniqueWindows(ss []Setting) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		if !slices.Contains(out, s.Window) {
			out = append(out, s.Window)
		}
	}
	return out
}

// WriteTable prints one row per cell.
func (r Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tsize\twindow\ttok/s\t(spread)\tTTFT p50\tp95\tp99\tITL p50\tp95\tp99\tfill\tefficiency\tutil\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%d\t%d\t%v\t%.1f\t(%.1f-%.1f)\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\t%.0f%%\t%.0f%%\t\n", x.Concurrency, x.Size,
			x.Window, x.TokensPerSec, x.MinTokensPerSec, x.MaxTokensPerSec, ms(x.TTFT.P50), ms(x.TTFT.P95), ms(x.TTFT.P99),
			ms(x.ITL.P50), ms(x.ITL.P95), ms(x.ITL.P99), 100*x.FillRate, 100*x.Efficiency, 100*x.Utilization)
	}
	tw.Flush()
	k := r.Knee
	fmt.Fprintf(w, "\nknee of throughput over batch size (window %v, %d clients): second difference %s, Kneedle %s; "+
		"reported: size %d (%s)\n", r.KneeAt.Window, r.topLoad(), r.sizeAt(k.SecondDiff), r.sizeAt(k.Kneedle), r.KneeAt.Size, k.Why)
	for _, p := range r.Picks {
		fmt.Fprintf(w, "%s (p95 TTFT <= %s, ITL <= %s): size %d, window %v, %.1f tok/s: %s\n", p.Channel, objective(p.TTFT),
			objective(p.ITL), p.Size, p.Window, p.TokensPerSec, p.Why)
	}
}

func (r Report) topLoad() int {
	if len(r.Curve) == 0 {
		return 0
	}
	return r.Curve[0].Concurrency
}

func (r Report) sizeAt(i int) string {
	if i < 0 || i >= len(r.Curve) {
		return "none"
	}
	return fmt.Sprintf("size %d", r.Curve[i].Size)
}

func ms(s float64) string { return fmt.Sprintf("%.0fms", 1000*s) }

// WriteTOML prints a batchd.toml fragment with the recommendation.
func (r Report) WriteTOML(w io.Writer, what string) {
	e := r.Engine
	fmt.Fprintf(w, "# batchd tune: %s\n", what)
	for _, p := range r.Picks {
		fmt.Fprintf(w, "# %s: max_num_seqs %d, window %v (%.1f tok/s; %s)\n", p.Channel, p.Size, p.Window, p.TokensPerSec, p.Why)
	}
	fmt.Fprintf(w, "# knee at max_num_seqs %d (%s)\n[engine]\nmax_num_seqs = %d\n", r.KneeAt.Size, r.Knee.Why, e.Size)
	if e.Window == 0 {
		fmt.Fprintln(w, `mode = "continuous"`)
		return
	}
	fmt.Fprintf(w, "mode = \"dynamic\"\nbatch_window = %q\n", strings.TrimSpace(e.Window.String()))
}

func objective(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
