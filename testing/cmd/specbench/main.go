// Command specbench measures batch-1 decode with and without speculative
// decoding on one model, rounds interleaved: each workload's requests run
// one at a time, decode speed is generated tokens after the first over the
// time from the first token to the last, and the ratio is per round.
//
//	go run ./testing/cmd/specbench --model build/l110-q4_k_m.gguf --rounds 3
//
// With --draft-model the speculative mode drafts with that model (on the
// target's threads) instead of n-gram lookup:
//
//	go run ./testing/cmd/specbench --model build/l110-q8_0.gguf --draft-model build/l110-q4_0.gguf
//
// Each round starts both modes' engines afresh, so the speculation gate
// learns from nothing; with --warm each mode keeps one engine over a
// workload's rounds, as a daemon does, and round 2 on shows what it has
// learnt (round 1 its cold start).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/cpu"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/sample"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "specbench:", err)
		os.Exit(1)
	}
}

// workload is a set of prompts decoded alike.
type workload struct {
	name     string
	prompts  []string
	sampling sample.Params
	schema   string // a JSON Schema the output must match (structured output); "" none
}

// teamSchema is structured output whose keys and punctuation repeat: an
// array of objects, what n-gram drafting catches in a schema's output.
const teamSchema = `{"type": "array", "minItems": 6, "maxItems": 6, "items": {"type": "object",
  "properties": {"name": {"type": "string", "maxLength": 8}, "role": {"enum": ["admin", "editor", "viewer"]},
    "active": {"type": "boolean"}}, "required": ["name", "role", "active"], "additionalProperties": false}}`

var code = `func (s *Scheduler) Schedule(now time.Time) *Step {
	st := &Step{Now: now}
	for _, seq := range s.running {
		n := len(seq.Tokens) - seq.Computed
		if n <= 0 {
			continue
		}
		st.add(seq, n)
	}
	for _, seq := range s.waiting {
		n := len(seq.Tokens) - seq.Computed
		if n <= 0 {
			continue
		}
		st.add(seq, n)
	}
	return st
}
`

func run() error {
	path := flag.String("model", "", "model file")
	tok := flag.String("tokenizer", "", "llama2.c tokenizer, for .bin checkpoints")
	rounds := flag.Int("rounds", 3, "rounds, each runs both modes in turn")
	maxTokens := flag.Int("max-tokens", 128, "tokens generated per request")
	draft := flag.Int("draft-tokens", 4, "tokens drafted per step")
	threads := flag.Int("threads", 2, "CPU threads")
	quantDot := flag.String("quant-dot", backend.DefaultQuantDot, "float, int8 or auto")
	batch := flag.Int("batch", 1, "copies of each prompt decoding at once")
	only := flag.String("workloads", "", "comma-separated workload names to run (default: all)")
	draftPath := flag.String("draft-model", "", "draft model file: speculate with it instead of n-gram lookup")
	llamaBin := flag.String("llama-server", "", "llama-server binary: with --draft-model, llama.cpp's figures on the same files beside batchd's, interleaved")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	warm := flag.Bool("warm", false, "keep each mode's engine over a workload's rounds (the gate keeps what it learnt)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	m, err := model.Load(*path, model.LoadOptions{Tokenizer: *tok})
	if err != nil {
		return err
	}
	defer m.Close()
	method := "ngram"
	var dm *model.Model
	if *draftPath != "" {
		if dm, err = model.Load(*draftPath, model.LoadOptions{Tokenizer: *tok}); err != nil {
			return err
		}
		defer dm.Close()
		method = "draft"
	}
	works := []workload{
		// A random-weight file falls into loops of its own on a run of
		// one word: what n-gram drafting catches on real models when the
		// output repeats text it has seen (code, quotes, a schema's keys).
		{"loop (greedy)", []string{strings.Repeat("stop ", 150)}, sample.Params{}, ""},
		{"code (greedy)", []string{"Here is the code again, unchanged:\n" + code + "\n" + code[:200]}, sample.Params{}, ""},
		{"document (greedy)", []string{strings.Repeat("The committee met on Tuesday and agreed the budget. ", 6) +
			"Summary: The committee met on"}, sample.Params{}, ""},
		{"json (schema, greedy)", []string{"The team as JSON: "}, sample.Params{}, teamSchema},
		{"free text (greedy)", []string{"Once upon a time", "The weather today", "In a distant land"}, sample.Params{}, ""},
		{"free text (sampled, T=1)", []string{"Once upon a time", "The weather today", "In a distant land"},
			sample.Params{Temperature: 1, Seed: 3}, ""},
	}
	if *only != "" {
		works = slices.DeleteFunc(works, func(w workload) bool { return !strings.Contains(*only, strings.Fields(w.name)[0]) })
	}
	var lp *llamaServer
	var ld []*llamaServer // --draft-p-min 0.8 (llama.cpp's default) and 0
	if *llamaBin != "" && dm != nil && *batch == 1 {
		if lp, err = startLlama(*llamaBin, *path, "", *draft, *threads, 0); err != nil {
			return err
		}
		defer lp.stop()
		for _, pMin := range []float64{0.8, 0} {
			s, err := startLlama(*llamaBin, *path, *draftPath, *draft, *threads, pMin)
			if err != nil {
				return err
			}
			defer s.stop()
			ld = append(ld, s)
		}
	}
	fmt.Printf("model %s, draft %s, batch %d, %d tokens a request, %d drafted a step, %d threads, quant_dot %s\n\n",
		*path, cmp.Or(*draftPath, "ngram"), *batch, *maxTokens, *draft, *threads, *quantDot)
	fmt.Printf("| workload | round | plain tok/s | %s tok/s | ratio | drafted | kept | verifying steps |", method)
	if lp != nil {
		fmt.Print(" llama.cpp plain | draft, p_min 0.8 | ratio | draft, p_min 0 | ratio |")
	}
	fmt.Print("\n|---|---|---|---|---|---|---|---|")
	if lp != nil {
		fmt.Print("---|---|---|---|---|")
	}
	fmt.Println()
	opts := benchOptions{threads: *threads, quantDot: *quantDot}
	for _, w := range works {
		var engs [2]*benchEngine
		for r := 1; r <= *rounds; r++ {
			var speed [2]float64
			var st engine.Stats
			for i, spec := range []engine.SpecConfig{{}, {Method: method, Tokens: *draft}} {
				if engs[i] == nil {
					if engs[i], err = startEngine(m, dm, spec, opts); err != nil {
						return err
					}
				}
				before := engs[i].e.Stats()
				s, err := decode(engs[i].e, w, *maxTokens, *batch)
				if err != nil {
					return err
				}
				speed[i], st = s, engs[i].e.Stats()
				st.SpecDrafted -= before.SpecDrafted
				st.SpecAccepted -= before.SpecAccepted
				st.SpecShares -= before.SpecShares
				if !*warm {
					engs[i].stop()
					engs[i] = nil
				}
			}
			fmt.Printf("| %s | %d | %.1f | %.1f | %.2fx | %d | %d | %d |", w.name, r, speed[0], speed[1], speed[1]/speed[0],
				st.SpecDrafted, st.SpecAccepted, st.SpecShares)
			if lp != nil {
				plain, err := lp.decode(context.Background(), w, *maxTokens)
				if err != nil {
					return err
				}
				fmt.Printf(" %.1f |", plain)
				for _, s := range ld {
					spec, err := s.decode(context.Background(), w, *maxTokens)
					if err != nil {
						return err
					}
					fmt.Printf(" %.1f | %.2fx |", spec, spec/plain)
				}
			}
			fmt.Println()
		}
		for _, be := range engs {
			if be != nil {
				be.stop()
			}
		}
	}
	return nil
}

type benchOptions struct {
	threads  int
	quantDot string
}

// benchEngine is a running engine and what stops it.
type benchEngine struct {
	e    *engine.Engine
	stop func()
}

// startEngine starts an engine on m (drafting with dm when spec says so).
func startEngine(m, dm *model.Model, spec engine.SpecConfig, o benchOptions) (*benchEngine, error) {
	be, err := cpu.New(m, backend.Options{NumBlocks: 256, BlockSize: 16, Threads: o.threads, QuantDot: o.quantDot})
	if err != nil {
		return nil, err
	}
	closers := []func() error{be.Close}
	stop := func() {
		for _, c := range slices.Backward(closers) {
			_ = c()
		}
	}
	if spec.Method == "draft" {
		dbe, err := cpu.New(dm, backend.Options{NumBlocks: 256, BlockSize: 16, Threads: o.threads, QuantDot: o.quantDot, ShareThreads: be})
		if err != nil {
			stop()
			return nil, err
		}
		closers = append(closers, dbe.Close)
		spec.Draft = &engine.DraftModel{Model: dm, Backend: dbe, NumBlocks: 256}
	}
	e, err := engine.New(engine.Options{Model: m, Backend: be, NumBlocks: 256, BlockSize: 16, Speculative: spec})
	if err != nil {
		stop()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Run(ctx); close(done) }()
	return &benchEngine{e: e, stop: func() { cancel(); <-done; stop() }}, nil
}

// decode runs w's prompts one at a time on e and returns the decode speed
// over all of them.
func decode(e *engine.Engine, w workload, maxTokens, batch int) (float64, error) {
	ctx := context.Background()
	var err error
	var tokens int
	var span time.Duration
	var g *grammar.Grammar
	if w.schema != "" {
		if g, err = grammar.FromSchema(context.Background(), []byte(w.schema), grammar.SchemaOptions{}); err != nil {
			return 0, err
		}
	}
	for _, p := range w.prompts {
		var streams []*engine.Stream
		for range batch {
			// A grammar's output ends where the schema does: no IgnoreEOS.
			st, err := e.Submit(ctx, engine.Request{Prompt: p, MaxTokens: maxTokens, IgnoreEOS: g == nil, Sampling: w.sampling, Grammar: g})
			if err != nil {
				return 0, err
			}
			streams = append(streams, st)
		}
		// Every copy's first token to the last copy's last: the copies run
		// together, so this is the batch's decode time.
		var first, last time.Time
		n := 0
		for _, st := range streams {
			for {
				ev, ok, err := st.Recv(ctx)
				if err != nil {
					return 0, err
				}
				if !ok {
					break
				}
				if len(ev.Tokens) > 0 {
					now := time.Now()
					if first.IsZero() || n == 0 {
						first = now
					}
					last = now
					n += len(ev.Tokens)
				}
			}
		}
		tokens += n - batch
		span += last.Sub(first)
	}
	return float64(tokens) / span.Seconds(), nil
}
