package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/daemon"
	"github.com/batchd/batchd/serve"

	"github.com/batchd/batchd/hwprofile"
	"github.com/batchd/batchd/model"
)

// runProfile is `batchd profile`: what was detected, the profile chosen, and
// (given a model) the plan the daemon would start with.
func runProfile(_ context.Context, args []string, env *runEnv) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	var cfg serve.LoadSpec
	fs.StringVar(&cfg.Model, "model", "", "model file to plan for")
	fs.StringVar(&cfg.Tokenizer, "tokenizer", "", "llama2.c tokenizer file")
	fs.StringVar(&cfg.ProfilesDir, "profiles", "", "directory of extra hardware profiles (*.toml)")
	fs.IntVar(&cfg.KVBlocks, "kv-blocks", 0, "requested KV blocks (clamped if they do not fit)")
	fs.IntVar(&cfg.Scheduler.MaxNumSeqs, "max-num-seqs", 0, "requested max_num_seqs")
	kvFlags(fs, &cfg)
	configPath := fs.String("config", "", "config file, for server.max_connections (the connection budget)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	maxConns := config.Default().Server.MaxConnections
	if *configPath != "" {
		c, err := config.LoadFile(*configPath)
		if err != nil {
			return err
		}
		maxConns = c.Server.MaxConnections
	}
	conns := daemon.ConnectionBudget(maxConns)
	out := map[string]any{"connections": conns}
	var det hwprofile.Detection
	var plan *hwprofile.Plan
	var planErr error
	if cfg.Model != "" {
		m, err := model.Load(cfg.Model, model.LoadOptions{Tokenizer: cfg.Tokenizer})
		if err != nil {
			return err
		}
		defer m.Close()
		var p hwprofile.Plan
		det, p, planErr = serve.PlanFor(m, cfg)
		plan = &p
	} else {
		det = hwprofile.Detect(context.Background(), hwprofile.DefaultGPUProbers(), hwprofile.HostCPU{}, 0)
	}
	nvmlReason := "used"
	if det.GPUProber == "" {
		nvmlReason = "not used: " + strings.Join(det.Fallbacks, "; ")
		if len(det.Fallbacks) == 0 {
			nvmlReason = "not used: this build has no NVML prober (built without cgo)"
		}
	}
	out["detected"] = det
	out["nvml"] = nvmlReason
	if plan != nil {
		out["profile"] = plan.Profile
		out["plan"] = plan
	}
	if planErr != nil {
		out["error"] = planErr.Error()
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
		return planErr
	}
	printProfile(env.stdout, det, nvmlReason, conns, plan)
	return planErr
}

// printProfile writes what runProfile found, for people.
func printProfile(w io.Writer, det hwprofile.Detection, nvmlReason string, conns daemon.ConnBudget, plan *hwprofile.Plan) {
	c := det.CPU
	fmt.Fprintf(w, "cpu       %s, %d cores, avx2=%v avx512=%v fma=%v, memory %d MiB available of %d MiB\n",
		c.Model, c.Cores, c.AVX2, c.AVX512, c.FMA, c.MemAvailable>>20, c.MemTotal>>20)
	for _, g := range det.GPUs {
		fmt.Fprintf(w, "gpu%d      %s %s, %d/%d MiB free, sm %d.%d\n", g.Index, g.Name, g.UUID,
			g.MemFree>>20, g.MemTotal>>20, g.ComputeMajor, g.ComputeMinor)
	}
	fmt.Fprintf(w, "nvml      %s\n", nvmlReason)
	fmt.Fprintf(w, "conns     %s\n", conns)
	if plan != nil {
		p := plan
		fmt.Fprintf(w, "profile   %s (backend %s on %s)\n", p.Profile, p.Backend, p.Device)
		fmt.Fprintf(w, "memory    %d MiB usable: weights %d MiB, activations %d MiB, KV %d MiB (headroom %.0f%%)\n",
			p.MemoryBytes>>20, p.WeightBytes>>20, p.ActivationReserve>>20, p.KVBudget>>20, p.Headroom*100)
		if p.Experts != "" {
			fmt.Fprintf(w, "experts   %s a token: it reads %d MiB of the weights' %d MiB (every expert is counted in the weights, mapped once)\n",
				p.Experts, p.ActiveBytes>>20, p.WeightBytes>>20)
		}
		fmt.Fprintf(w, "kv        %s: %d blocks x %d tokens x %d bytes/token: %d tokens, %d MiB reserved; memory is committed "+
			"as blocks are first used (batchctl stats: resident)\n",
			p.KVCacheType, p.KVBlocks, p.BlockSize, p.KVBytesPerToken, p.KVTokens, int64(p.KVBlocks)*int64(p.BlockSize)*int64(p.KVBytesPerToken)>>20)
		if p.KVWindowTables > 0 {
			fmt.Fprintf(w, "window    a block holds %d layers; the sliding-window layers (a window of %d tokens) take %d blocks more "+
				"a block, held only while a query sees them: %d sequences of %d tokens fit\n", p.KVBlockLayers, p.SlidingWindow,
				p.KVWindowTables, p.FullContextSeqs, p.MaxContext)
		}
		fmt.Fprintf(w, "limits    context %d, %d sequences at full context, max_num_seqs %d, max_num_batched_tokens %d, threads %d\n",
			p.MaxContext, p.FullContextSeqs, p.MaxNumSeqs, p.MaxNumBatchedTokens, p.Threads)
		for _, warning := range p.Warnings {
			fmt.Fprintf(w, "warning   %s\n", warning)
		}
	}
}
