package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/tokenizer"
)

// stringsFlag collects a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return fmt.Sprint(*s) }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// kvFlags registers the K/V type flags (llama.cpp's -ctk/-ctv are the
// last two).
func kvFlags(fs *flag.FlagSet, cfg *serve.LoadSpec) {
	fs.StringVar(&cfg.KVCacheType, "kv-cache-type", "f16", "how K and V are stored: f16, f32, q8_0, q4_0, q5_0 or iq4_nl")
	fs.StringVar(&cfg.KVCacheTypeK, "kv-cache-type-k", "", "K's type alone (default: --kv-cache-type)")
	fs.StringVar(&cfg.KVCacheTypeV, "kv-cache-type-v", "", "V's type alone (default: --kv-cache-type)")
}

// engineFlags registers the flags that shape the model and engine.
func engineFlags(fs *flag.FlagSet, cfg *serve.LoadSpec, policy, mode *string) {
	fs.StringVar(&cfg.Model, "model", "", "model file: GGUF or llama2.c checkpoint")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", "", "llama2.c tokenizer file (for llama2.c checkpoints)")
	fs.StringVar(&cfg.Format, "format", "", "model format: gguf or llama2c (default: detect)")
	fs.IntVar(&cfg.BlockSize, "block-size", 0, "tokens per KV block (default: from the hardware profile)")
	fs.IntVar(&cfg.KVBlocks, "kv-blocks", 0, "KV blocks in the pool (default: planned from memory)")
	fs.IntVar(&cfg.Threads, "threads", 0, "CPU threads (default: all)")
	fs.BoolVar(&cfg.NoPrefixCache, "no-prefix-cache", false, "disable prefix caching")
	kvFlags(fs, cfg)
	fs.StringVar(&cfg.QuantDot, "quant-dot", backend.DefaultQuantDot, "quantized weights: float (exact dequantization), int8 (quantized activations, as llama.cpp) or auto (int8 with AVX512-VNNI, else prompts float, generated tokens int8)")
	fs.IntVar(&cfg.Scheduler.MaxNumSeqs, "max-num-seqs", 0, "sequences running at once (default: from the profile)")
	fs.IntVar(&cfg.Scheduler.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "tokens per step (default: from the profile)")
	fs.StringVar(&cfg.ProfilesDir, "profiles", "", "directory of extra hardware profiles (*.toml)")
	fs.IntVar(&cfg.Scheduler.MaxPartialPrefills, "max-partial-prefills", 1, "prompts prefilled in part per step")
	fs.StringVar(policy, "policy", "fcfs", "scheduling policy: fcfs or priority")
	fs.StringVar(mode, "mode", "continuous", "batching: continuous, static or dynamic (baselines)")
	fs.StringVar(&cfg.Speculative.Method, "speculative", "", "speculative decoding: ngram (drafts from the request's own tokens), draft (a draft model's greedy tokens: --draft-model), or none")
	fs.IntVar(&cfg.Speculative.Tokens, "draft-tokens", 4, "tokens drafted per step")
	fs.IntVar(&cfg.Speculative.MaxBatch, "draft-max-batch", 16, "drafting stops above this many decoding sequences (below, where it stops paying)")
	fs.StringVar(&cfg.DraftModel, "draft-model", "", "the draft model's file (the target's vocabulary) for --speculative draft, which it implies")
}

func applyPolicyMode(cfg *serve.LoadSpec, policy, mode string) error {
	var err error
	if cfg.Speculative.Method, err = sched.ParseSpecMethod(cfg.Speculative.Method); err != nil {
		return err
	}
	if cfg.Scheduler.Policy, err = sched.ParsePolicy(policy); err != nil {
		return err
	}
	cfg.Scheduler.Mode, err = sched.ParseMode(mode)
	return err
}

// generateResult is one line of `batchd generate --json`.
type generateResult struct {
	Prompt       string         `json:"prompt"`
	PromptTokens []int          `json:"prompt_tokens"`
	OutputTokens []int          `json:"output_tokens"`
	Text         string         `json:"text"`
	FinishReason string         `json:"finish_reason"`
	Error        string         `json:"error,omitempty"`
	Preemptions  int            `json:"preemptions"`
	Usage        engine.Usage   `json:"usage"`
	Timings      map[string]any `json:"timings"`
}

// generateArgs is what `batchd generate` was asked.
type generateArgs struct {
	cfg       serve.LoadSpec
	prompts   []string
	maxTokens int
	sampling  sample.Params
	stops     []string
	stopIDs   []int
	asJSON    bool
	logLevel  string
}

// parseGenerate reads the flags; flags and positional prompts may
// interleave (generate --model M "text" --max-tokens 5): Go's flag package
// stops at the first positional, so it parses again after each one.
func parseGenerate(args []string, env *runEnv) (*generateArgs, error) {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	a := &generateArgs{}
	var policy, mode string
	engineFlags(fs, &a.cfg, &policy, &mode)
	var prompts, stops stringsFlag
	fs.Var(&prompts, "prompt", "prompt text (repeatable; all prompts run as one batch)")
	fs.IntVar(&a.maxTokens, "max-tokens", 0, "generated tokens at most (default: up to the context)")
	temp := fs.Float64("temperature", 0, "sampling temperature (0 = greedy)")
	topP := fs.Float64("top-p", 0, "nucleus sampling mass (0 = off)")
	minP := fs.Float64("min-p", 0, "min-p filter (0 = off)")
	rep := fs.Float64("repeat-penalty", 0, "repetition penalty (0 or 1 = off)")
	fs.IntVar(&a.sampling.TopK, "top-k", 0, "keep the k most likely tokens (0 = off)")
	fs.Uint64Var(&a.sampling.Seed, "seed", 0, "sampling seed")
	fs.Var(&stops, "stop", "stop string (repeatable)")
	fs.Func("stop-token-id", "token id that also ends generation (repeatable)", func(v string) error {
		id, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		a.stopIDs = append(a.stopIDs, id)
		return nil
	})
	fs.BoolVar(&a.asJSON, "json", false, "print one JSON object per prompt, in prompt order")
	fs.StringVar(&a.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		prompts = append(prompts, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if err := applyPolicyMode(&a.cfg, policy, mode); err != nil {
		return nil, usageError{err}
	}
	if len(prompts) == 0 {
		return nil, usageError{errors.New("generate needs a prompt: batchd generate --model FILE [flags] PROMPT (or --prompt TEXT, repeatable)")}
	}
	a.prompts, a.stops = prompts, stops
	a.sampling.Temperature, a.sampling.TopP = float32(*temp), float32(*topP)
	a.sampling.MinP, a.sampling.RepetitionPenalty = float32(*minP), float32(*rep)
	return a, nil
}

// runGenerate runs every prompt together through one engine, in process.
func runGenerate(ctx context.Context, args []string, env *runEnv) error {
	a, err := parseGenerate(args, env)
	if err != nil {
		return err
	}
	log, err := newLogger(env.stderr, a.logLevel, "")
	if err != nil {
		return usageError{err}
	}
	rt, err := serve.Open(a.cfg, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	results := make([]generateResult, len(a.prompts))
	streams := make([]*engine.Stream, len(a.prompts))
	for i, p := range a.prompts {
		req := engine.Request{Prompt: p, MaxTokens: a.maxTokens, Sampling: a.sampling, Stop: a.stops, StopTokenIDs: a.stopIDs}
		if req.Tokens, err = rt.Model.Tokenizer.Tokenize(ctx, p, tokenizer.Options{AddSpecial: true, ParseSpecial: true}); err != nil {
			return err
		}
		results[i] = generateResult{Prompt: p, PromptTokens: req.Tokens, OutputTokens: []int{}}
		if streams[i], err = rt.Engine.Submit(ctx, req); err != nil {
			return fmt.Errorf("prompt %d: %w", i+1, err)
		}
	}
	// Stream text live when there is one prompt and a person is reading.
	live := len(a.prompts) == 1 && !a.asJSON
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			collect(ctx, s, &results[i], live, env.stdout)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return printResults(env.stdout, results, a.asJSON, live)
}

// collect reads one stream into its result, echoing text when live.
func collect(ctx context.Context, s *engine.Stream, r *generateResult, live bool, out io.Writer) {
	for {
		ev, ok, err := s.Recv(ctx)
		if err != nil || !ok {
			if err != nil {
				r.Error = err.Error()
			}
			return
		}
		if live {
			_, _ = io.WriteString(out, ev.Text)
		}
		r.Text += ev.Text
		r.OutputTokens = append(r.OutputTokens, ev.Tokens...)
		if ev.Done {
			r.FinishReason, r.Preemptions, r.Usage = string(ev.Finish), ev.Preemptions, ev.Usage
			r.Timings = map[string]any{"queue_s": ev.Timings.Queue.Seconds(),
				"ttft_s": ev.Timings.FirstToken.Seconds(), "total_s": ev.Timings.Total.Seconds()}
			if ev.Err != nil {
				r.Error = ev.Err.Error()
			}
		}
	}
}

func printResults(w io.Writer, results []generateResult, asJSON, live bool) error {
	switch {
	case asJSON:
		enc := json.NewEncoder(w)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	case live:
		fmt.Fprintln(w)
	default:
		for i, r := range results {
			fmt.Fprintf(w, "--- prompt %d (%s, %d tokens)\n%s%s\n", i+1, r.FinishReason, len(r.OutputTokens), r.Prompt, r.Text)
		}
	}
	return nil
}
