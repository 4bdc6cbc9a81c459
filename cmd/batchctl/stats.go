package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// printStats prints the daemon's figures for a person: grouped, with units
// and rounded numbers (--json keeps the raw ones).
func printStats(w io.Writer, s map[string]any) {
	m := func(k string) map[string]any { v, _ := s[k].(map[string]any); return v }
	plan, cfg := m("plan"), m("config")
	fmt.Fprintf(w, "batchd %s: %s batching, policy %s, on %s (profile %s)\n\n", str(s["state"]), str(s["mode"]),
		str(s["policy"]), str(plan["device"]), str(plan["profile"]))
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
	row("Requests", fmt.Sprintf("%s running, %s waiting", count(s["running"]), count(s["waiting"])),
		fmt.Sprintf("%s submitted, %s rejected", count(s["submitted"]), count(s["rejected"])),
		"finished: "+counts(s["finished"]))
	row("Throughput", fmt.Sprintf("%.1f tok/s generated (last 10 s)", num(s["tokens_per_sec"])),
		fmt.Sprintf("%s prompt and %s generated tokens in all", count(s["prompt_tokens"]), count(s["generated_tokens"])))
	row("Latency", dist("first token", s["ttft"]), dist("between tokens", s["inter_token"]),
		dist("queued", s["queue_time"]), dist("total", s["e2e"]))
	used, total := num(s["kv_blocks_used"]), num(s["kv_blocks_total"])
	row("KV cache", fmt.Sprintf("%s of %s blocks used (%.1f%%), %s cached", count(used), count(total), pct(used, total),
		count(s["kv_blocks_cached"])), fmt.Sprintf("%s tokens a block", count(s["block_size"])),
		fmt.Sprintf("prefix cache hit %.1f%% of %s prompt tokens", pct(num(s["prefix_cache_hits"]), num(s["prefix_cache_queries"])),
			count(s["prefix_cache_queries"])))
	row("Batching", fmt.Sprintf("up to %s sequences and %s tokens a step", count(s["max_num_seqs"]), count(s["max_num_batched_tokens"])),
		fmt.Sprintf("mean batch %.1f over %s steps", num(s["mean_batch_size"]), count(s["steps"])),
		fmt.Sprintf("%s preemptions", count(s["preemptions"])))
	if fs := num(s["forward_seconds"]); fs > 0 {
		row("Model speed", fmt.Sprintf("%s tokens in %s of forward passes (%.0f tok/s)", count(s["forward_tokens"]),
			dur(fs), num(s["forward_tokens"])/fs))
	}
	if b, _ := s["sleeping"].(bool); b || num(s["sleeps"]) > 0 {
		row("Sleep", fmt.Sprintf("sleeping %v", b), fmt.Sprintf("%s sleeps, %s wakes, last wake %s", count(s["sleeps"]),
			count(s["wakes"]), dur(num(s["last_wake_seconds"]))))
	}
	restart := "none"
	if l, _ := s["restart_needed"].([]any); len(l) > 0 {
		restart = fmt.Sprint(l...)
	}
	row("Config", fmt.Sprintf("%s reloads, %s rejected", count(s["reloads"]), count(s["reload_errors"])),
		"restart needed: "+restart, fmt.Sprintf("log level %s", str(cfg["log_level"])))
	if e := str(s["last_reload_error"]); e != "" {
		row("", "last rejected reload: "+e)
	}
	if l, _ := plan["warnings"].([]any); len(l) > 0 {
		for _, x := range l {
			row("Warning", str(x))
		}
	}
	tw.Flush()

	reqs, _ := s["requests"].([]any)
	if len(reqs) == 0 {
		fmt.Fprintln(w, "\nNo requests in flight.")
		return
	}
	fmt.Fprintln(w, "\nRequests in flight (cancel with batchctl cancel ID):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tUSER\tCHANNEL\tSTATE\tAGE\tPROMPT\tGENERATED")
	for _, x := range reqs {
		r, _ := x.(map[string]any)
		state := str(r["state"])
		if b, _ := r["cancel_requested"].(bool); b {
			state += " (cancelling)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s/%s\n", count(r["id"]), str(r["user"]), str(r["channel"]), state,
			dur(num(r["age_s"])), count(r["prompt_tokens"]), count(r["generated_tokens"]), count(r["max_tokens"]))
	}
	tw.Flush()
}

func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case float32:
		return float64(n)
	case int64:
		return float64(n)
	case uint64:
		return float64(n)
	case int:
		return float64(n)
	}
	return 0
}

func str(v any) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(v)
}

// count writes a whole number with thousands separators: 12,345.
func count(v any) string {
	n := int64(num(v))
	s := fmt.Sprint(max(n, -n))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n < 0 {
		s = "-" + s
	}
	return s
}

func counts(v any) string {
	m, _ := v.(map[string]any)
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

func dist(label string, v any) string {
	d, _ := v.(map[string]any)
	if num(d["count"]) == 0 {
		return ""
	}
	return fmt.Sprintf("%s p50 %s, p95 %s", label, dur(num(d["p50"])), dur(num(d["p95"])))
}

// printTable prints a nested map as aligned "key  value" lines, sorted.
func printTable(w io.Writer, prefix string, m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := m[k].(type) {
		case map[string]any:
			printTable(w, prefix+k+".", v)
		default:
			fmt.Fprintf(w, "%-36s %v\n", prefix+k, v)
		}
	}
}
