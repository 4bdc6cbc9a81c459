// Command bench replays one workload trace through the engine in each
// batching mode (static, dynamic, continuous) on the same model, in process,
// and prints a comparison table or JSON:
//
//	go run ./testing/bench --model FILE [--tokenizer FILE] --trace poisson|FILE \
//	    --rate R --requests N --modes static,dynamic,continuous [--seed S] [--json]
package main

import (
	"context"
	"encoding/json"
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

	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/model"
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
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg daemon.EngineConfig
	fs.StringVar(&cfg.Model, "model", "", "model file (required)")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", "", "llama2.c tokenizer file")
	fs.IntVar(&cfg.BlockSize, "block-size", 16, "tokens per KV block")
	fs.IntVar(&cfg.KVBlocks, "kv-blocks", 0, "KV blocks (default: sized from the model)")
	fs.IntVar(&cfg.Threads, "threads", 0, "CPU threads (default: all)")
	fs.IntVar(&cfg.Scheduler.MaxNumSeqs, "max-num-seqs", 32, "sequences running at once (and the static/dynamic batch size)")
	fs.IntVar(&cfg.Scheduler.MaxNumBatchedTokens, "max-num-batched-tokens", 512, "tokens per step")
	window := fs.Duration("window", 0, "dynamic batching window (default 50ms; static flushes after 2s)")
	traceArg := fs.String("trace", "poisson", "poisson, or a JSONL trace file")
	rate := fs.Float64("rate", 2, "Poisson arrivals per second")
	n := fs.Int("requests", 64, "requests in a Poisson trace")
	modes := fs.String("modes", "static,dynamic,continuous", "modes to run, comma-separated")
	seed := fs.Uint64("seed", 1, "trace seed")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
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
	if *traceArg == "poisson" {
		trace = poissonTrace(rng, *n, *rate, c.Vocab, c.Context)
	} else if trace, err = loadTrace(*traceArg, rng, c.Vocab, c.Context); err != nil {
		return err
	}
	results := map[string]modeResult{}
	var order []string
	for _, name := range strings.Split(*modes, ",") {
		mode, err := engine.ParseMode(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		mc := cfg
		mc.Scheduler.Mode = mode
		fmt.Fprintf(os.Stderr, "bench: %s: %d requests...\n", mode, len(trace))
		r, err := replay(mc, trace, log)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		results[mode.String()] = r
		order = append(order, mode.String())
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"modes": results})
	}
	printTable(stdout, order, results)
	return nil
}

// replay submits the trace at its arrival times and waits for every request.
func replay(cfg daemon.EngineConfig, trace []traceReq, log *slog.Logger) (modeResult, error) {
	rt, err := daemon.OpenEngine(cfg, log)
	if err != nil {
		return modeResult{}, err
	}
	defer rt.Close()
	e := rt.Engine
	var peak float64
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() { // KV usage is sampled, not exact: every 20 ms
		defer close(polled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopPoll:
				return
			case <-t.C:
				peak = max(peak, e.Stats().KVUsage)
			}
		}
	}()
	type outcome struct {
		latency, ttft time.Duration
		tokens        int
		ok            bool
	}
	outs := make([]outcome, len(trace))
	start := time.Now()
	var wg sync.WaitGroup
	var submitErr error
	for i, tr := range trace {
		if d := time.Until(start.Add(tr.Arrival)); d > 0 {
			time.Sleep(d)
		}
		s, err := e.Submit(context.Background(), engine.Request{Tokens: tr.Prompt, MaxTokens: tr.MaxTokens,
			Priority: tr.Priority, IgnoreEOS: true})
		if err != nil {
			submitErr = err
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, toks, done, err := s.Wait(context.Background())
			outs[i] = outcome{done.Timings.Total, done.Timings.FirstToken, len(toks),
				err == nil && (done.Finish == engine.FinishLength || done.Finish == engine.FinishStop)}
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
	st := e.Stats()
	r.ThroughputTokS = float64(r.GeneratedTokens) / makespan.Seconds()
	r.MeanLatencyS, r.P50LatencyS, r.P95LatencyS, r.P99LatencyS = mean(lat), pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)
	r.TTFTP50S, r.TTFTP95S = pct(ttft, 0.5), pct(ttft, 0.95)
	r.MeanBatchSize, r.PeakKVUsage, r.Preemptions = st.MeanBatchSize, max(peak, st.KVUsage), st.Preemptions
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

func printTable(w io.Writer, order []string, res map[string]modeResult) {
	fmt.Fprintf(w, "%-11s %9s %8s %8s %8s %8s %8s %8s %7s %7s %7s\n", "mode", "tok/s", "mean_s", "p50_s",
		"p95_s", "p99_s", "ttft50", "ttft95", "batch", "kv_pk", "preempt")
	for _, name := range order {
		r := res[name]
		fmt.Fprintf(w, "%-11s %9.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f %7.2f %7d\n", name, r.ThroughputTokS,
			r.MeanLatencyS, r.P50LatencyS, r.P95LatencyS, r.P99LatencyS, r.TTFTP50S, r.TTFTP95S, r.MeanBatchSize,
			r.PeakKVUsage, r.Preemptions)
	}
	if s, ok := res["static"]; ok {
		if c, ok := res["continuous"]; ok && s.ThroughputTokS > 0 && s.P95LatencyS > 0 {
			fmt.Fprintf(w, "continuous vs static: throughput x%.2f, p95 latency x%.2f\n",
				c.ThroughputTokS/s.ThroughputTokS, c.P95LatencyS/s.P95LatencyS)
		}
	}
}
