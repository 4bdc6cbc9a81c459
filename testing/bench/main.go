// Command bench replays one workload trace through the engine in each
// batching mode (static, dynamic, continuous) on the same model, in process,
// and prints a comparison table or JSON:
//
//	go run ./testing/bench --model FILE [--tokenizer FILE] --trace poisson|FILE \
//	    --rate R --requests N --modes static,dynamic,continuous [--seed S] [--json]
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/testing/cpuprof"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// modeResult is one mode's figures; the JSON names are the harness's interface.
type modeResult struct {
	Requests        int     `json:"requests"`
	Completed       int     `json:"completed"`
	GeneratedTokens int     `json:"generated_tokens"`
	MakespanS       float64 `json:"makespan_s"`
	ThroughputTokS  float64 `json:"throughput_tok_s"`
	MeanLatencyS    float64 `json:"mean_latency_s"`
	P50LatencyS     float64 `json:"p50_latency_s"`
	P95LatencyS     float64 `json:"p95_latency_s"`
	P99LatencyS     float64 `json:"p99_latency_s"`
	TTFTP50S        float64 `json:"ttft_p50_s"`
	TTFTP95S        float64 `json:"ttft_p95_s"`
	MeanBatchSize   float64 `json:"mean_batch_size"`
	PeakKVUsage     float64 `json:"peak_kv_usage"`
	Preemptions     uint64  `json:"preemptions"`
	// The model's raw work: steps, tokens run through it (padding included)
	// and those tokens per second of forward time.
	Steps            uint64  `json:"steps"`
	ForwardTokens    uint64  `json:"forward_tokens"`
	ForwardTokPerSec float64 `json:"forward_tok_s"`
	// Per channel, for channel-tagged traces.
	Channels map[string]channelResult `json:"channels,omitempty"`
	// Series samples the run over time, for plots.
	Series []point `json:"series,omitempty"`
}

type channelResult struct {
	Requests       int     `json:"requests"`
	Completed      int     `json:"completed"`
	Rejected       int     `json:"rejected"` // deadline or queue limit
	ThroughputTokS float64 `json:"throughput_tok_s"`
	TTFTP50S       float64 `json:"ttft_p50_s"`
	TTFTP95S       float64 `json:"ttft_p95_s"`
	TTFTP99S       float64 `json:"ttft_p99_s"`
	TTFTTargetS    float64 `json:"ttft_target_s"`
	TTFTAttainment float64 `json:"ttft_attainment"` // share of completed requests within target
}

// point is one sample of a run's time series.
type point struct {
	T          float64 `json:"t_s"`
	TokS       float64 `json:"tok_s"`
	BatchSize  float64 `json:"batch_size"`
	P95Latency float64 `json:"p95_latency_s"` // of requests that ended in this interval
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg serve.LoadSpec
	fs.StringVar(&cfg.Model, "model", "", "model file (required)")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", "", "llama2.c tokenizer file")
	fs.IntVar(&cfg.BlockSize, "block-size", 16, "tokens per KV block")
	fs.IntVar(&cfg.KVBlocks, "kv-blocks", 0, "KV blocks (default: sized from the model)")
	fs.IntVar(&cfg.Threads, "threads", 0, "CPU threads (default: all)")
	fs.StringVar(&cfg.KVCacheType, "kv-cache-type", "f16", "how K and V are stored: f16 or f32")
	fs.IntVar(&cfg.Scheduler.MaxNumSeqs, "max-num-seqs", 32, "sequences running at once (and the static/dynamic batch size)")
	fs.IntVar(&cfg.Scheduler.MaxNumBatchedTokens, "max-num-batched-tokens", 512, "tokens per step")
	window := fs.Duration("window", 0, "dynamic batching window (default 50ms; static flushes after 2s)")
	traceArg := fs.String("trace", "poisson", "poisson, bursty (3x surge), daynight, mixed (realtime/standard/bulk), or a JSONL file")
	rate := fs.Float64("rate", 2, "Poisson arrivals per second")
	n := fs.Int("requests", 64, "requests in a Poisson trace")
	modes := fs.String("modes", "static,dynamic,continuous", "modes to run, comma-separated: static, dynamic, continuous (fixed limits), adaptive (continuous with the adaptive controller)")
	policy := fs.String("policy", "fcfs", "scheduling policy: fcfs, priority or slo")
	only := fs.String("only-channel", "", "mixed trace: keep one channel's requests (the alone baseline)")
	rtTarget := fs.Duration("realtime-ttft", 500*time.Millisecond, "realtime channel TTFT target (slo policy deadline is 20x)")
	plot := fs.String("plot", "", "write an SVG plot of throughput, batch size and p95 latency over time")
	seed := fs.Uint64("seed", 1, "trace seed")
	asJSON := fs.Bool("json", false, "print one JSON object")
	repeat := fs.Int("repeat", 1, "run the modes this many times, interleaved, and report each mode's median run (by throughput): a noisy machine then hits every mode alike")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfile, err := cpuprof.Start(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	cfg.Scheduler.BatchWindow = *window
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := model.Load(cfg.Model, model.LoadOptions{Tokenizer: cfg.Tokenizer})
	if err != nil {
		return err
	}
	c := m.Config
	m.Close()
	rng := rand.New(rand.NewPCG(*seed, 7))
	var trace []traceReq
	switch *traceArg {
	case "poisson":
		trace = poissonTrace(rng, *n, *rate, c.Vocab, c.Context)
	case "bursty":
		trace = burstyTrace(rng, *n, *rate, c.Vocab, c.Context)
	case "daynight":
		trace = dayNightTrace(rng, *n, *rate, c.Vocab, c.Context)
	case "mixed":
		trace = mixedTrace(rng, *n, *rate, c.Vocab, c.Context, *only)
	default:
		if trace, err = loadTrace(*traceArg, rng, c.Vocab, c.Context); err != nil {
			return err
		}
	}
	if cfg.Scheduler.Policy, err = sched.ParsePolicy(*policy); err != nil {
		return err
	}
	targets := map[string]time.Duration{"realtime": *rtTarget, "standard": 4 * *rtTarget, "bulk": 60 * *rtTarget}
	cfg.TTFTTarget = *rtTarget
	cfg.Channels = map[string]engine.ChannelPolicy{
		"realtime": {Share: 0.5, Deadline: 20 * *rtTarget},
		"standard": {Share: 0.35},
		"bulk":     {Share: 0.15},
	}
	var order []string
	configs := map[string]serve.LoadSpec{}
	for _, name := range strings.Split(*modes, ",") {
		name = strings.TrimSpace(name)
		mc := cfg
		if name == "adaptive" {
			mc.Adaptive = true
		} else if mc.Scheduler.Mode, err = sched.ParseMode(name); err != nil {
			return err
		}
		configs[name] = mc
		order = append(order, name)
	}
	runs := map[string][]modeResult{}
	for rep := range max(*repeat, 1) {
		for _, name := range order {
			fmt.Fprintf(os.Stderr, "bench: %s: %d requests (run %d of %d)...\n", name, len(trace), rep+1, max(*repeat, 1))
			r, err := replay(configs[name], trace, targets, log)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			runs[name] = append(runs[name], r)
		}
	}
	results := map[string]modeResult{}
	for name, rs := range runs {
		results[name] = medianRun(rs)
	}
	if *plot != "" {
		if err := writePlot(*plot, order, results); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"modes": results, "trace": summarize(trace)})
	}
	printTrace(stdout, summarize(trace))
	printTable(stdout, order, results)
	if *repeat > 1 {
		printRuns(stdout, order, runs)
	}
	if *plot != "" {
		fmt.Fprintf(stdout, "plot: %s\n", *plot)
	}
	return nil
}

// replay submits the trace at its arrival times and waits for every request.
func replay(cfg serve.LoadSpec, trace []traceReq, targets map[string]time.Duration, log *slog.Logger) (modeResult, error) {
	rt, err := serve.Open(cfg, log)
	if err != nil {
		return modeResult{}, err
	}
	defer rt.Close()
	e := rt.Engine
	var peak float64
	var series []point
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	start := time.Now()
	go func() { // KV usage is sampled, not exact: every 20 ms; the series every 500 ms
		defer close(polled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var lastGen, lastSteps uint64
		var lastSeqs float64
		lastAt := start
		for i := 1; ; i++ {
			select {
			case <-stopPoll:
				return
			case <-t.C:
			}
			st := e.Stats()
			peak = max(peak, st.KVUsage)
			if i%25 != 0 {
				continue
			}
			now := time.Now()
			seqs := st.MeanBatchSize * float64(st.Steps)
			p := point{T: now.Sub(start).Seconds(), TokS: float64(st.GeneratedTokens-lastGen) / now.Sub(lastAt).Seconds()}
			if st.Steps > lastSteps {
				p.BatchSize = (seqs - lastSeqs) / float64(st.Steps-lastSteps)
			}
			series = append(series, p)
			lastGen, lastSteps, lastSeqs, lastAt = st.GeneratedTokens, st.Steps, seqs, now
		}
	}()
	type outcome struct {
		latency, ttft time.Duration
		end           time.Duration // since start
		tokens        int
		ok            bool
		rejected      bool
		channel       string
	}
	outs := make([]outcome, len(trace))
	var wg sync.WaitGroup
	var submitErr error
	for i, tr := range trace {
		if d := time.Until(start.Add(tr.Arrival)); d > 0 {
			time.Sleep(d)
		}
		s, err := e.Submit(context.Background(), engine.Request{Tokens: tr.Prompt, MaxTokens: tr.MaxTokens,
			Priority: tr.Priority, Channel: tr.Channel, IgnoreEOS: true})
		if errors.Is(err, engine.ErrQueueFull) {
			outs[i] = outcome{rejected: true, channel: tr.Channel}
			continue
		}
		if err != nil {
			submitErr = err
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, toks, done, err := s.Wait(context.Background())
			outs[i] = outcome{latency: done.Timings.Total, ttft: done.Timings.FirstToken, end: time.Since(start),
				tokens: len(toks), channel: tr.Channel,
				ok:       err == nil && (done.Finish == engine.FinishLength || done.Finish == engine.FinishStop),
				rejected: errors.Is(done.Err, engine.ErrDeadlineExceeded)}
		}()
	}
	wg.Wait()
	makespan := time.Since(start)
	close(stopPoll)
	<-polled
	if submitErr != nil {
		return modeResult{}, submitErr
	}
	var lat, ttft []float64
	r := modeResult{Requests: len(trace), MakespanS: makespan.Seconds()}
	for _, o := range outs {
		if !o.ok {
			continue
		}
		r.Completed++
		r.GeneratedTokens += o.tokens
		lat = append(lat, o.latency.Seconds())
		ttft = append(ttft, o.ttft.Seconds())
	}
	// Per channel, and p95 latency of the requests ending in each interval.
	byCh := map[string]*channelResult{}
	ttfts := map[string][]float64{}
	tokens := map[string]int{}
	for _, o := range outs {
		if o.channel == "" {
			continue
		}
		cr := byCh[o.channel]
		if cr == nil {
			cr = &channelResult{TTFTTargetS: targets[o.channel].Seconds()}
			byCh[o.channel] = cr
		}
		cr.Requests++
		if o.rejected {
			cr.Rejected++
		}
		if o.ok {
			cr.Completed++
			tokens[o.channel] += o.tokens
			ttfts[o.channel] = append(ttfts[o.channel], o.ttft.Seconds())
			if o.ttft <= targets[o.channel] {
				cr.TTFTAttainment++
			}
		}
	}
	if len(byCh) > 0 {
		r.Channels = map[string]channelResult{}
		for ch, cr := range byCh {
			t := ttfts[ch]
			cr.TTFTP50S, cr.TTFTP95S, cr.TTFTP99S = pct(t, 0.5), pct(t, 0.95), pct(t, 0.99)
			if cr.Requests > 0 {
				cr.TTFTAttainment /= float64(cr.Requests) // rejected requests count as misses
			}
			cr.ThroughputTokS = float64(tokens[ch]) / makespan.Seconds()
			r.Channels[ch] = *cr
		}
	}
	for i := range series {
		lo := 0.0
		if i > 0 {
			lo = series[i-1].T
		}
		var lat []float64
		for _, o := range outs {
			if o.ok && o.end.Seconds() > lo && o.end.Seconds() <= series[i].T {
				lat = append(lat, o.latency.Seconds())
			}
		}
		series[i].P95Latency = pct(lat, 0.95)
	}
	r.Series = series
	st := e.Stats()
	r.ThroughputTokS = float64(r.GeneratedTokens) / makespan.Seconds()
	r.MeanLatencyS, r.P50LatencyS, r.P95LatencyS, r.P99LatencyS = mean(lat), pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)
	r.TTFTP50S, r.TTFTP95S = pct(ttft, 0.5), pct(ttft, 0.95)
	r.MeanBatchSize, r.PeakKVUsage, r.Preemptions = st.MeanBatchSize, max(peak, st.KVUsage), st.Preemptions
	r.Steps, r.ForwardTokens = st.Steps, st.ForwardTokens
	if st.ForwardSeconds > 0 {
		r.ForwardTokPerSec = float64(st.ForwardTokens) / st.ForwardSeconds
	}
	return r, nil
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func pct(x []float64, p float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// traceSummary says how much work a trace offers and how fast: a mode whose
// throughput is near offered_tok_s was limited by arrivals, not by itself.
type traceSummary struct {
	Requests     int     `json:"requests"`
	SpanS        float64 `json:"span_s"` // first to last arrival
	PromptTokens int     `json:"prompt_tokens"`
	MaxTokens    int     `json:"max_tokens"`    // output tokens asked for, at most
	OfferedTokS  float64 `json:"offered_tok_s"` // max_tokens over the span
}

func summarize(trace []traceReq) traceSummary {
	var t traceSummary
	t.Requests = len(trace)
	for _, r := range trace {
		t.PromptTokens += len(r.Prompt)
		t.MaxTokens += r.MaxTokens
	}
	if len(trace) > 1 {
		t.SpanS = (trace[len(trace)-1].Arrival - trace[0].Arrival).Seconds()
		t.OfferedTokS = float64(t.MaxTokens) / t.SpanS
	}
	return t
}

func printTrace(w io.Writer, t traceSummary) {
	fmt.Fprintf(w, "trace: %d requests over %.1f s, %d prompt tokens, up to %d output tokens (offered %.0f tok/s)\n",
		t.Requests, t.SpanS, t.PromptTokens, t.MaxTokens, t.OfferedTokS)
}

func printTable(w io.Writer, order []string, res map[string]modeResult) {
	fmt.Fprintf(w, "%-11s %9s %8s %8s %8s %8s %8s %8s %7s %7s %7s\n", "mode", "tok/s", "mean_s", "p50_s",
		"p95_s", "p99_s", "ttft50", "ttft95", "batch", "kv_pk", "preempt")
	for _, name := range order {
		r := res[name]
		fmt.Fprintf(w, "%-11s %9.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f %7.2f %7d\n", name, r.ThroughputTokS,
			r.MeanLatencyS, r.P50LatencyS, r.P95LatencyS, r.P99LatencyS, r.TTFTP50S, r.TTFTP95S, r.MeanBatchSize,
			r.PeakKVUsage, r.Preemptions)
	}
	for _, name := range order {
		r := res[name]
		var chans []string
		for ch := range r.Channels {
			chans = append(chans, ch)
		}
		slices.Sort(chans)
		for _, ch := range chans {
			c := r.Channels[ch]
			fmt.Fprintf(w, "  %-10s %-9s %4d req %4d rejected %8.1f tok/s  ttft p50 %6.2f p95 %6.2f p99 %6.2f  within %.2fs: %5.1f%%\n",
				name, ch, c.Requests, c.Rejected, c.ThroughputTokS, c.TTFTP50S, c.TTFTP95S, c.TTFTP99S, c.TTFTTargetS,
				100*c.TTFTAttainment)
		}
	}
	if s, ok := res["static"]; ok {
		if c, ok := res["continuous"]; ok && s.ThroughputTokS > 0 && s.P95LatencyS > 0 {
			fmt.Fprintf(w, "continuous vs static: throughput x%.2f, p95 latency x%.2f\n",
				c.ThroughputTokS/s.ThroughputTokS, c.P95LatencyS/s.P95LatencyS)
		}
	}
}

// medianRun returns the run with the median throughput (the lower middle
// one for an even count).
func medianRun(rs []modeResult) modeResult {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b modeResult) int { return cmp.Compare(a.ThroughputTokS, b.ThroughputTokS) })
	return sorted[(len(sorted)-1)/2]
}

// printRuns lists every run's throughput and, for static against
// continuous, the ratios of the runs made back to back.
func printRuns(w io.Writer, order []string, runs map[string][]modeResult) {
	for _, name := range order {
		fmt.Fprintf(w, "%-11s runs, tok/s:", name)
		for _, r := range runs[name] {
			fmt.Fprintf(w, " %.1f", r.ThroughputTokS)
		}
		fmt.Fprintln(w)
	}
	s, c := runs["static"], runs["continuous"]
	if len(s) == 0 || len(s) != len(c) {
		return
	}
	fmt.Fprint(w, "continuous vs static, run by run: throughput")
	for i := range s {
		fmt.Fprintf(w, " x%.2f", c[i].ThroughputTokS/s[i].ThroughputTokS)
	}
	fmt.Fprint(w, "; p95 latency")
	for i := range s {
		fmt.Fprintf(w, " x%.2f", c[i].P95LatencyS/s[i].P95LatencyS)
	}
	fmt.Fprintln(w)
}
