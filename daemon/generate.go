package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/sample"
)

// stringsFlag collects a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return fmt.Sprint(*s) }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// engineFlags registers the flags that shape the model and engine.
func engineFlags(fs *flag.FlagSet, cfg *EngineConfig, policy, mode *string) {
	fs.StringVar(&cfg.Model, "model", "", "model file: GGUF or llama2.c checkpoint")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", "", "llama2.c tokenizer file (for llama2.c checkpoints)")
	fs.StringVar(&cfg.Format, "format", "", "model format: gguf or llama2c (default: detect)")
	fs.IntVar(&cfg.BlockSize, "block-size", 0, "tokens per KV block (default: from the hardware profile)")
	fs.IntVar(&cfg.KVBlocks, "kv-blocks", 0, "KV blocks in the pool (default: planned from memory)")
	fs.IntVar(&cfg.Threads, "threads", 0, "CPU threads (default: all)")
	fs.BoolVar(&cfg.NoPrefixCache, "no-prefix-cache", false, "disable prefix caching")
	fs.StringVar(&cfg.KVCacheType, "kv-cache-type", "f16", "how K and V are stored: f16 or f32")
	fs.IntVar(&cfg.Scheduler.MaxNumSeqs, "max-num-seqs", 0, "sequences running at once (default: from the profile)")
	fs.IntVar(&cfg.Scheduler.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "tokens per step (default: from the profile)")
	fs.StringVar(&cfg.ProfilesDir, "profiles", "", "directory of extra hardware profiles (*.toml)")
	fs.IntVar(&cfg.Scheduler.MaxPartialPrefills, "max-partial-prefills", 1, "prompts prefilled in part per step")
	fs.StringVar(policy, "policy", "fcfs", "scheduling policy: fcfs or priority")
	fs.StringVar(mode, "mode", "continuous", "batching: continuous, static or dynamic (baselines)")
}

func applyPolicyMode(cfg *EngineConfig, policy, mode string) error {
	var err error
	if cfg.Scheduler.Policy, err = engine.ParsePolicy(policy); err != nil {
		return err
	}
	cfg.Scheduler.Mode, err = engine.ParseMode(mode)
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

// runGenerate runs every --prompt together through one engine, in process.
func runGenerate(ctx context.Context, args []string, env *runEnv) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	var cfg EngineConfig
	var policy, mode string
	engineFlags(fs, &cfg, &policy, &mode)
	var prompts stringsFlag
	fs.Var(&prompts, "prompt", "prompt text (repeatable; all prompts run as one batch)")
	maxTokens := fs.Int("max-tokens", 0, "generated tokens at most (default: up to the context)")
	var sp sample.Params
	temp := fs.Float64("temperature", 0, "sampling temperature (0 = greedy)")
	topP := fs.Float64("top-p", 0, "nucleus sampling mass (0 = off)")
	minP := fs.Float64("min-p", 0, "min-p filter (0 = off)")
	rep := fs.Float64("repeat-penalty", 0, "repetition penalty (0 or 1 = off)")
	fs.IntVar(&sp.TopK, "top-k", 0, "keep the k most likely tokens (0 = off)")
	fs.Uint64Var(&sp.Seed, "seed", 0, "sampling seed")
	var stops stringsFlag
	fs.Var(&stops, "stop", "stop string (repeatable)")
	asJSON := fs.Bool("json", false, "print one JSON object per prompt, in prompt order")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	// Flags and positional prompts may interleave (generate --model M "text"
	// --max-tokens 5): Go's flag package stops at the first positional, so
	// parse again after each one. Nothing given is ignored.
	for {
		if err := fs.Parse(args); err != nil {
			return usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		prompts = append(prompts, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if err := applyPolicyMode(&cfg, policy, mode); err != nil {
		return usageError{err}
	}
	if len(prompts) == 0 {
		return usageError{errors.New("generate needs a prompt: batchd generate --model FILE [flags] PROMPT (or --prompt TEXT, repeatable)")}
	}
	sp.Temperature, sp.TopP, sp.MinP, sp.RepetitionPenalty = float32(*temp), float32(*topP), float32(*minP), float32(*rep)
	log, err := newLogger(env.stderr, *logLevel, "")
	if err != nil {
		return usageError{err}
	}
	rt, err := OpenEngine(cfg, log)
	if err != nil {
		return err
	}
	defer rt.Close()

	results := make([]generateResult, len(prompts))
	streams := make([]*engine.Stream, len(prompts))
	for i, p := range prompts {
		req := engine.Request{Prompt: p, MaxTokens: *maxTokens, Sampling: sp, Stop: stops}
		req.Tokens = rt.Model.Tokenizer.Encode(p, true)
		results[i] = generateResult{Prompt: p, PromptTokens: req.Tokens, OutputTokens: []int{}}
		if streams[i], err = rt.Engine.Submit(ctx, req); err != nil {
			return fmt.Errorf("prompt %d: %w", i+1, err)
		}
	}
	// Stream text live when there is one prompt and a person is reading.
	live := len(prompts) == 1 && !*asJSON
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			for {
				ev, ok, err := s.Recv(ctx)
				if err != nil || !ok {
					if err != nil {
						r.Error = err.Error()
					}
					return
				}
				if live {
					_, _ = io.WriteString(env.stdout, ev.Text)
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
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(env.stdout)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	case live:
		fmt.Fprintln(env.stdout)
	default:
		for i, r := range results {
			fmt.Fprintf(env.stdout, "--- prompt %d (%s, %d tokens)\n%s%s\n", i+1, r.FinishReason, len(r.OutputTokens), r.Prompt, r.Text)
		}
	}
	return nil
}
