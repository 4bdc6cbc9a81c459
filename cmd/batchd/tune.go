package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/serve"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/tune"
	"github.com/batchd/batchd/tune/remote"
)

const tuneUsage = `Usage: batchd tune --model FILE [flags]

Tunes the batcher for a model on this machine. It runs the model in
process over a matrix of batch sizes (max_num_seqs), batch windows (0 is
continuous batching) and loads (clients at once), a few rounds each, and
measures throughput and time to first token in every cell. For each
channel it finds the knee (where more batch stops paying for the latency it
costs, against the channel's objectives from --config) and writes the
recommendation as a TOML fragment (tune.toml) and two plots to --out.

With --apply it rolls the recommendation out to the daemon on --socket:
it watches the running settings for --watch, writes the new ones into
--config (the daemon reloads them live), watches again, and keeps them
only if throughput and p95 time to first token held within 10%;
otherwise it writes the old file back (mode, owner and group kept).

Flags:
`

// runTune is `batchd tune`: the test matrix on the model, in process.
func runTune(ctx context.Context, args []string, env *runEnv) error {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), tuneUsage)
		fs.PrintDefaults()
	}
	var cfg serve.LoadSpec
	var policy, mode string
	engineFlags(fs, &cfg, &policy, &mode)
	m := tune.Default()
	sizes := fs.String("sizes", joinInts(m.Sizes), "batch sizes (max_num_seqs), comma-separated")
	windows := fs.String("windows", "10ms,50ms,100ms,200ms", "batch windows (mode dynamic; 0 is continuous batching)")
	loads := fs.String("concurrency", joinInts(m.Concurrency), "loads: clients at once")
	fs.IntVar(&m.Requests, "requests", m.Requests, "requests per cell")
	fs.IntVar(&m.Rounds, "rounds", m.Rounds, "rounds (interleaved, each in its own order)")
	fs.IntVar(&m.MaxTokens, "max-tokens", m.MaxTokens, "tokens generated per request")
	configPath := fs.String("config", "", "batchd.toml: the channels' objectives (and --apply's file)")
	out := fs.String("out", "tune-out", "directory for tune.toml, throughput.svg and heatmap.svg")
	apply := fs.Bool("apply", false, "roll the recommendation out to the daemon on --socket through --config, or roll back")
	socket := fs.String("socket", "/run/batchd/batchd.sock", "--apply: the running daemon")
	watch := fs.Duration("watch", 30*time.Second, "--apply: how long to watch the baseline and then the candidate")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	var err error
	if m.Sizes, err = tune.ParseInts(*sizes); err == nil {
		if m.Concurrency, err = tune.ParseInts(*loads); err == nil {
			m.Windows, err = tune.ParseDurations(*windows)
		}
	}
	if err != nil || cfg.Model == "" || m.Requests < 1 {
		return usageError{errors.Join(err, errors.New("want --model FILE, and at least one size, window, load and request"))}
	}
	c := config.Default()
	if *configPath != "" {
		if c, err = config.LoadFile(*configPath); err != nil {
			return err
		}
	}
	rep, err := tuneInProcess(ctx, cfg, m, env)
	if err != nil {
		return err
	}
	rep = tune.Recommend(rep.Results, objectives(c))
	what := fmt.Sprintf("%s, %s", filepath.Base(cfg.Model), time.Now().Format(time.DateTime))
	if err := rep.WriteFiles(env.stdout, *out, what); err != nil {
		return err
	}
	if !*apply {
		return nil
	}
	if *configPath == "" {
		return usageError{errors.New("--apply needs --config, the running daemon's config file")}
	}
	kept, why, err := rollout(ctx, *socket, *configPath, rep.Engine.Setting, *watch, env)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "rollout of max_num_seqs %d, window %v: kept %v: %s\n", rep.Engine.Size, rep.Engine.Window, kept, why)
	return nil
}

func objectives(c config.Config) []tune.Objective {
	var out []tune.Objective
	for _, ch := range []string{"realtime", "standard", "bulk"} {
		cc := c.Channels[ch]
		out = append(out, tune.Objective{Channel: ch, TTFT: cc.TTFTTarget.Duration, ITL: cc.ITLTarget.Duration})
	}
	return out
}

// tuneInProcess runs the matrix on an engine of this process, each cell
// under its setting (the adaptive controller off, the prefix cache off:
// the cells' prompts are distinct anyway).
func tuneInProcess(ctx context.Context, cfg serve.LoadSpec, m tune.Matrix, env *runEnv) (tune.Report, error) {
	log, err := newLogger(env.stderr, "warn", "")
	if err != nil {
		return tune.Report{}, err
	}
	cfg.Adaptive, cfg.NoPrefixCache = false, true
	cfg.Scheduler.MaxNumSeqs = slices.Max(m.Sizes)
	rt, err := serve.Open(cfg, log)
	if err != nil {
		return tune.Report{}, err
	}
	defer rt.Close()
	start := time.Now()
	res, err := tune.Run(ctx, m, func(ctx context.Context, c tune.Cell, m tune.Matrix) (tune.Sample, error) {
		return runCell(ctx, rt, cfg.Scheduler, c, m)
	}, func(round int, s tune.Sample) {
		fmt.Fprintf(env.stderr, "round %d: %v: %.1f tok/s, TTFT p95 %.0fms (%s)\n", round, s.Cell, s.TokensPerSec,
			1000*s.TTFT.P95, time.Since(start).Round(time.Second))
	})
	return tune.Report{Results: res}, err
}

// runCell sets the cell's batch size and window, then runs its load:
// distinct random prompts of the mix's kinds, a fixed number of tokens each.
func runCell(ctx context.Context, rt *serve.LoadedModel, base sched.Config, c tune.Cell, m tune.Matrix) (tune.Sample, error) {
	sc := base
	sc.MaxNumSeqs, sc.Mode, sc.BatchWindow, sc.BatchSize = c.Size, sched.ModeContinuous, 0, 0
	if c.Window > 0 {
		sc.Mode, sc.BatchWindow = sched.ModeDynamic, c.Window
	}
	rt.Engine.SetScheduler(sc)
	a := rt.Engine.Stats()
	start := time.Now()
	s, err := tune.RunLoad(ctx, c, m, func(ctx context.Context, _, i int) (tune.Request, error) {
		return cellRequest(ctx, rt, m, i, rand.New(rand.NewPCG(uint64(i), uint64(c.Size))))
	})
	b := rt.Engine.Stats()
	s.Engine(engineCounters(a), engineCounters(b), time.Since(start))
	return s, err
}

func engineCounters(s engine.Stats) tune.Counters {
	return tune.Counters{Steps: s.Steps, MeanBatchSize: s.MeanBatchSize, ForwardSeconds: s.ForwardSeconds}
}

// cellRequest runs request i of the mix on the engine.
func cellRequest(ctx context.Context, rt *serve.LoadedModel, m tune.Matrix, i int, rng *rand.Rand) (tune.Request, error) {
	toks := make([]int, max(1, m.PromptTokens[m.Kind(i)]))
	vocab := rt.Model.Config.Vocab
	for j := range toks {
		toks[j] = 3 + rng.IntN(max(1, vocab-3))
	}
	st, err := rt.Engine.Submit(ctx, engine.Request{Tokens: toks, MaxTokens: m.MaxTokens, IgnoreEOS: true, Channel: "bulk"})
	if err != nil {
		return tune.Request{}, err
	}
	var r tune.Request
	begin := time.Now()
	last := begin
	for {
		ev, ok, err := st.Recv(ctx)
		if err != nil || !ok {
			return r, err
		}
		if ev.Done {
			r.Total, r.Compute = ev.Timings.Total, ev.Timings.Total-ev.Timings.Queue
			return r, ev.Err
		}
		now := time.Now()
		if r.Tokens == 0 {
			r.TTFT = now.Sub(begin).Seconds()
		} else {
			r.Gaps = append(r.Gaps, now.Sub(last).Seconds())
		}
		r.Tokens += len(ev.Tokens)
		last = now
	}
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

// rollout rolls cand out to the daemon on socket through its config file.
func rollout(ctx context.Context, socket, path string, cand tune.Setting, watch time.Duration, env *runEnv) (bool, string, error) {
	c, err := client.Dial(ctx, socket)
	if err != nil {
		return false, "", err
	}
	defer c.Close()
	t, err := remote.NewTarget(ctx, c, path)
	if err != nil {
		return false, "", err
	}
	return tune.Rollout(ctx, t, cand, watch, tune.DefaultTolerance, func(s string) { fmt.Fprintln(env.stderr, "rollout:", s) })
}
