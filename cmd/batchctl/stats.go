package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/batchd/batchd/ipc/wire"
)

// printStats prints the daemon's figures for a person: grouped, with units
// and rounded numbers (--json keeps the raw ones).
func printStats(w io.Writer, s *wire.StatsReport) {
	fmt.Fprintf(w, "batchd %s: %s batching, policy %s, on %s (profile %s)\n\n", s.State, s.Mode, s.Policy,
		s.Plan.Device, s.Plan.Profile)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(label string, parts ...string) {
		var keep []string
		for _, p := range parts {
			if p != "" {
				keep = append(keep, p)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, strings.Join(keep, " · "))
	}
	row("Requests", fmt.Sprintf("%s running, %s waiting", count(s.Running), count(s.Waiting)),
		fmt.Sprintf("%s submitted, %s rejected", count(s.Submitted), count(s.Rejected)), "finished: "+counts(s.Finished))
	row("Throughput", fmt.Sprintf("%.1f tok/s generated (last 10 s)", s.TokensPerSec),
		fmt.Sprintf("%s prompt and %s generated tokens in all", count(s.PromptTokens), count(s.GeneratedTokens)))
	row("Latency", dist("first token", s.TTFT), dist("between tokens", s.InterToken), dist("queued", s.QueueTime),
		dist("total", s.E2E))
	row("KV cache", fmt.Sprintf("%s of %s blocks used (%.1f%%), %s cached", count(s.KVBlocksUsed), count(s.KVBlocksTotal),
		pct(float64(s.KVBlocksUsed), float64(s.KVBlocksTotal)), count(s.KVBlocksCached)),
		fmt.Sprintf("%s resident (the rest reserved)", count(s.KVBlocksTouched)),
		fmt.Sprintf("%s tokens a block", count(s.BlockSize)),
		kvType(s.Plan),
		fmt.Sprintf("prefix cache hit %.1f%% of %s prompt tokens", pct(float64(s.PrefixHits), float64(s.PrefixQueries)),
			count(s.PrefixQueries)))
	if p := s.Plan; p.KVWindowTables > 0 {
		row("Window layers", fmt.Sprintf("%s used and %s cached blocks are window blocks", count(s.KVWindowBlocksUsed),
			count(s.KVWindowBlocksCached)), fmt.Sprintf("a block holds %s layers; a sequence holds %s more a block for its last %s positions",
			count(p.KVBlockLayers), count(p.KVWindowTables), count(p.SlidingWindow)))
	}
	row("Batching", fmt.Sprintf("up to %s sequences and %s tokens a step", count(s.MaxNumSeqs), count(s.MaxNumBatchedTokens)),
		fmt.Sprintf("mean batch %.1f over %s steps", s.MeanBatchSize, count(s.Steps)),
		fmt.Sprintf("%s preemptions", count(s.Preemptions)))
	if s.SpecShares > 0 {
		row("Speculation", fmt.Sprintf("%s of %s drafted tokens kept (%.1f%%)", count(s.SpecAccepted), count(s.SpecDrafted),
			pct(float64(s.SpecAccepted), float64(s.SpecDrafted))),
			fmt.Sprintf("%.2f tokens a verifying step", 1+float64(s.SpecAccepted)/float64(s.SpecShares)))
	}
	if s.MoELayerPasses > 0 {
		l := float64(s.MoELayerPasses)
		row("Experts", fmt.Sprintf("%.1f tokens routed and %.1f experts read a layer a step", float64(s.MoEPairs)/l, float64(s.MoETouched)/l),
			fmt.Sprintf("%.2f tokens an expert", float64(s.MoEPairs)/float64(max(s.MoETouched, 1))))
	}
	row("Dashboard", fmt.Sprintf("batch fill %.0f%% (%s)", 100*s.FillRate, byChannel(s.FillRateByChannel)),
		fmt.Sprintf("scheduling efficiency %.0f%% (%s)", 100*s.Efficiency, byChannel(s.EfficiencyByChannel)))
	h := s.Health
	row("Health", fmt.Sprintf("%.2f", h.Score), fmt.Sprintf("throughput %.2f, latency %.2f, utilization %.2f, memory headroom %.2f",
		h.Throughput, h.Latency, h.Utilization, h.MemoryHeadroom))
	if s.ForwardSeconds > 0 {
		row("Model speed", fmt.Sprintf("%s tokens in %s of forward passes (%.0f tok/s)", count(s.ForwardTokens),
			dur(s.ForwardSeconds), float64(s.ForwardTokens)/s.ForwardSeconds))
	}
	if s.Sleeping || s.Sleeps > 0 {
		row("Sleep", fmt.Sprintf("sleeping %v", s.Sleeping), fmt.Sprintf("%s sleeps, %s wakes, last wake %s",
			count(s.Sleeps), count(s.Wakes), dur(s.LastWakeSeconds)))
	}
	if c := s.Connections; c.Max > 0 {
		row("Connections", fmt.Sprintf("%d open of %d (%d unauthenticated, at most %d)", c.Open, c.Max, c.Pending, c.MaxPending),
			fmt.Sprintf("%s refused, %s closed to make room", count(c.Refused), count(c.Evicted)))
	}
	restart := "none"
	if len(s.RestartNeeded) > 0 {
		restart = strings.Join(s.RestartNeeded, ", ")
	}
	row("Config", fmt.Sprintf("%s reloads, %s rejected", count(s.Reloads), count(s.ReloadErrors)),
		"restart needed: "+restart, "log level "+s.Config.LogLevel)
	if s.LastReloadError != "" {
		row("", "last rejected reload: "+s.LastReloadError)
	}
	if len(s.ReloadHeld) > 0 {
		row("", "held: the config file widens access ("+strings.Join(s.ReloadHeld, "; ")+"); batchctl reload applies it")
	}
	for _, x := range s.Plan.Warnings {
		row("Warning", x)
	}
	tw.Flush()
	printRequests(w, s.Requests)
}

func printRequests(w io.Writer, reqs []wire.RequestInfo) {
	if len(reqs) == 0 {
		fmt.Fprintln(w, "\nNo requests in flight.")
		return
	}
	fmt.Fprintln(w, "\nRequests in flight (cancel with batchctl cancel ID):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tUSER\tCHANNEL\tSTATE\tAGE\tPROMPT\tGENERATED")
	for _, r := range reqs {
		state := r.State
		if r.CancelRequested {
			state += " (cancelling)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s/%s\n", count(r.ID), r.User, r.Channel, state, dur(r.AgeS),
			count(r.PromptTokens), count(r.GeneratedTokens), count(r.MaxTokens))
	}
	tw.Flush()
}

// count writes a whole number with thousands separators: 12,345.
func count[T int | uint32 | uint64](v T) string {
	n := int64(v)
	s := fmt.Sprint(max(n, -n))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n < 0 {
		s = "-" + s
	}
	return s
}

func counts(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" "+count(m[k]))
	}
	return strings.Join(parts, ", ")
}

func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * a / b
}

// dur writes seconds with a unit that keeps two or three digits.
func dur(sec float64) string {
	switch {
	case sec == 0:
		return "0"
	case sec < 1e-3:
		return fmt.Sprintf("%.0f µs", sec*1e6)
	case sec < 1:
		return fmt.Sprintf("%.1f ms", sec*1e3)
	case sec < 120:
		return fmt.Sprintf("%.2f s", sec)
	}
	return fmt.Sprintf("%.1f min", sec/60)
}

func dist(label string, d wire.Dist) string {
	if d.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%s p50 %s, p95 %s", label, dur(d.P50), dur(d.P95))
}

// printModel prints the health reply's model description.
func printModel(w io.Writer, m *wire.ModelInfo) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "model    %s (%s, %s)\nshape    dim %d, %d layers, vocab %s, context %s\n", m.Path, m.Format, m.Arch,
		m.Dim, m.Layers, count(m.Vocab), count(m.Context))
	switch {
	case m.Chat != "":
		fmt.Fprintf(w, "chat     template %s\n", m.Chat)
	case m.ChatError != "":
		fmt.Fprintf(w, "chat     off: %s\n", m.ChatError)
	}
}

// byChannel prints per-channel fractions as percentages, in channel order.
func byChannel(m map[string]float64) string {
	var parts []string
	for _, c := range []string{"realtime", "standard", "bulk"} {
		if v, ok := m[c]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", c, 100*v))
		}
	}
	if len(parts) == 0 {
		return "no requests in the last minute"
	}
	return strings.Join(parts, ", ")
}

// kvType says how K and V are stored, and what a token of them costs.
func kvType(p wire.Plan) string {
	if p.KVCacheType == "" {
		return ""
	}
	return fmt.Sprintf("K/V in %s (%s bytes a token)", p.KVCacheType, count(p.KVBytesPerToken))
}
