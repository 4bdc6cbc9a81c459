package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/batchd/batchd/tune"
	"github.com/batchd/batchd/tune/remote"
)

// tuneCmd runs the test matrix against the running daemon: each cell's
// setting through the daemon's config file (the hot-reload path), its
// load in the bulk channel, the file put back after; --apply then rolls
// the recommendation out, or back.
func tuneCmd(fs *flag.FlagSet) runFunc {
	m := tune.Default()
	config := fs.String("config", "/etc/batchd/batchd.toml", "the daemon's config file (it must be writable)")
	sizes := fs.String("sizes", "4,8,16,32", "batch sizes (max_num_seqs)")
	windows := fs.String("windows", "10ms,50ms,100ms,200ms", "batch windows (mode dynamic; 0 is continuous batching)")
	loads := fs.String("concurrency", "8,32", "loads: clients at once")
	fs.IntVar(&m.Requests, "requests", m.Requests, "requests per cell")
	fs.IntVar(&m.Rounds, "rounds", m.Rounds, "rounds (interleaved, each in its own order)")
	fs.IntVar(&m.MaxTokens, "max-tokens", m.MaxTokens, "tokens generated per request")
	out := fs.String("out", "tune-out", "directory for tune.toml, throughput.svg and heatmap.svg")
	apply := fs.Bool("apply", false, "roll the recommendation out (kept only if it holds up against the baseline)")
	watch := fs.Duration("watch", 30*time.Second, "--apply: how long to watch the baseline and then the candidate")
	return func(ctx context.Context, socket string, args []string, stdout, stderr io.Writer) error {
		var err error
		if m.Sizes, err = tune.ParseInts(*sizes); err == nil {
			if m.Concurrency, err = tune.ParseInts(*loads); err == nil {
				m.Windows, err = tune.ParseDurations(*windows)
			}
		}
		if err != nil || len(args) > 0 {
			return usageErr{fmt.Errorf("bad matrix or arguments: %v %v", err, args)}
		}
		objs, err := objectivesOf(*config)
		if err != nil {
			return err
		}
		c, err := dial(ctx, socket)
		if err != nil {
			return err
		}
		defer c.Close()
		t, err := remote.NewTarget(ctx, c, *config)
		if err != nil {
			return err
		}
		res, err := tune.Run(ctx, m, t.Runner(), func(round int, s tune.Sample) {
			fmt.Fprintf(stderr, "round %d: %v: %.1f tok/s, TTFT p95 %.0fms\n", round, s.Cell, s.TokensPerSec, 1000*s.TTFT.P95)
		})
		if rerr := t.Restore(); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
		rep := tune.Recommend(res, objs)
		if err := rep.WriteFiles(stdout, *out, "batchctl tune, "+time.Now().Format(time.DateTime)); err != nil {
			return err
		}
		if !*apply {
			return nil
		}
		kept, why, err := tune.Rollout(ctx, t, rep.Engine.Setting, *watch, tune.DefaultTolerance,
			func(s string) { fmt.Fprintln(stderr, "rollout:", s) })
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rollout of max_num_seqs %d, window %v: kept %v: %s\n", rep.Engine.Size, rep.Engine.Window, kept, why)
		return nil
	}
}

// objectivesOf reads the channels' objectives from the config file,
// batchd's defaults where it says nothing.
func objectivesOf(path string) ([]tune.Objective, error) {
	var f struct {
		Channels map[string]struct {
			TTFT string `toml:"ttft_target"`
			ITL  string `toml:"itl_target"`
		} `toml:"channels"`
	}
	if _, err := toml.DecodeFile(path, &f); err != nil {
		return nil, err
	}
	defaults := map[string][2]time.Duration{"realtime": {500 * time.Millisecond, 100 * time.Millisecond},
		"standard": {2 * time.Second, 250 * time.Millisecond}, "bulk": {30 * time.Second, 0}}
	var out []tune.Objective
	for _, ch := range []string{"realtime", "standard", "bulk"} {
		o := tune.Objective{Channel: ch, TTFT: defaults[ch][0], ITL: defaults[ch][1]}
		if c, ok := f.Channels[ch]; ok {
			for _, v := range []struct {
				s   string
				dst *time.Duration
			}{{c.TTFT, &o.TTFT}, {c.ITL, &o.ITL}} {
				if v.s == "" {
					continue
				}
				d, err := time.ParseDuration(v.s)
				if err != nil {
					return nil, fmt.Errorf("%s: channels.%s: %w", path, ch, err)
				}
				*v.dst = d
			}
		}
		out = append(out, o)
	}
	return out, nil
}
