package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	client "github.com/batchd/batchd/clients/go"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/backends"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/tokenizer"
)

// PrefixCacheConfig keeps the prefix cache warm ([prefix_cache]).
type PrefixCacheConfig struct {
	// Persist writes the prefix cache under state_dir on drain, sleep and
	// idle exit and reads it back at start and wake when the model, its
	// numerics and the KV layout match (default true with a state_dir).
	Persist *bool `toml:"persist"`
	// Pin are prompts prefilled into the default model's cache at start
	// and after a wake and never evicted (system prompts, few-shot
	// blocks); PinFile adds those of a JSONL file ({"prompt": TEXT} or
	// {"messages": [...]} per line, a chat prefix rendered without a
	// generation prompt) (restart).
	Pin     []string `toml:"pin"`
	PinFile string   `toml:"pin_file"`
	// PersistMaxBytes bounds each model's saved cache to its most recently
	// used blocks, so that the save at a stop fits systemd's stop timeout
	// (default 1 GiB; 0 is that default, -1 no bound).
	PersistMaxBytes int64 `toml:"persist_max_bytes"`
}

// persistMax is PersistMaxBytes with its default.
func (pc PrefixCacheConfig) persistMax() int64 {
	switch {
	case pc.PersistMaxBytes == 0:
		return 1 << 30
	case pc.PersistMaxBytes < 0:
		return 0
	}
	return pc.PersistMaxBytes
}

// check reads the pin file, so a start or reload fails on a bad one.
func (pc PrefixCacheConfig) check() error {
	if pc.PinFile == "" {
		return nil
	}
	if _, _, err := readWarmFile(pc.PinFile); err != nil {
		return fmt.Errorf("prefix_cache.pin_file: %w", err)
	}
	return nil
}

// cacheFileOf names the model's saved prefix cache and what it must match:
// the file's digest, the backend's numerics, the KV type and block size.
func cacheFileOf(cfg EngineConfig, m *model.Model, be backend.Backend, kv quant.DType) (string, string) {
	if cfg.CacheDir == "" || cfg.NoPrefixCache {
		return "", ""
	}
	name := regexp.MustCompile(`[^A-Za-z0-9._-]`).ReplaceAllString(cfg.Name, "_")
	id := fmt.Sprintf("model %s; backend %s; kv %v; quant_dot %s; blocks of %d", m.Digest(), backends.Describe(be), kv,
		cfg.QuantDot, cfg.BlockSize)
	return filepath.Join(cfg.CacheDir, "prefix-cache-"+name+".bin"), id
}

// readWarmFile reads a JSONL file of prompts and chat prefixes.
func readWarmFile(path string) ([]string, []wire.JSON, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	prompts, raw, err := client.ReadWarmFile(f, path)
	chats := make([]wire.JSON, len(raw))
	for i, c := range raw {
		chats[i] = wire.JSON(c)
	}
	return prompts, chats, err
}

// warmTokens tokenizes prompts as a submit's and renders chat prefixes.
func warmTokens(ctx context.Context, rt *Runtime, prompts []string, chats []wire.JSON) ([][]int, error) {
	var out [][]int
	for _, p := range prompts {
		toks, err := rt.Model.Tokenizer.Tokenize(ctx, p, tokenizer.Options{AddSpecial: true, ParseSpecial: true})
		if err != nil {
			return nil, wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
		}
		out = append(out, toks)
	}
	for i, m := range chats {
		if rt.Chat == nil {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "chat %d: the model has no chat template", i)
		}
		toks, _, err := chatPrompt(ctx, rt, chatRequest{Messages: m})
		if err != nil {
			return nil, err
		}
		out = append(out, toks)
	}
	return out, nil
}

// pinPrefixes pins the configured prefixes in the default model's cache.
func (d *Daemon) pinPrefixes(rt *Runtime, pc PrefixCacheConfig) error {
	prompts, chats := pc.Pin, []wire.JSON(nil)
	if pc.PinFile != "" {
		p, c, err := readWarmFile(pc.PinFile)
		if err != nil {
			return fmt.Errorf("prefix_cache.pin_file: %w", err)
		}
		prompts, chats = append(prompts, p...), c
	}
	if len(prompts)+len(chats) == 0 {
		return nil
	}
	toks, err := warmTokens(context.Background(), rt, prompts, chats)
	if err != nil {
		return fmt.Errorf("prefix_cache.pin: %w", err)
	}
	rt.Engine.SetPins(toks)
	d.log.Info("prefix cache: pinning", "prefixes", len(toks))
	return nil
}

var _ ipc.Warmer = ipcBackend{}

// Warm prefills each prompt and chat prefix into the model's prefix cache
// (bulk channel, the user's cap), generating nothing.
func (b ipcBackend) Warm(ctx context.Context, p ipc.Peer, w *wire.Warm) (*wire.Warm, error) {
	if _, err := b.d.waitReady(ctx); err != nil {
		return nil, err
	}
	if n := len(w.Prompts) + len(w.Messages); n == 0 || n > wire.MaxWarmEntries {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "warm: %d prompts and chats: want 1 to %d", n, wire.MaxWarmEntries)
	}
	rt, lease, err := b.d.acquireModel(ctx, w.Model, nil)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	toks, err := warmTokens(ctx, rt, w.Prompts, w.Messages)
	if err != nil {
		return nil, err
	}
	streams := make([]*engine.Stream, len(toks))
	for i, t := range toks {
		if streams[i], err = rt.Engine.Submit(ctx, engine.Request{Tokens: t, Prefill: true, Owner: p.UID, Channel: "bulk"}); err != nil {
			return nil, wireError(err)
		}
	}
	out := &wire.Warm{}
	for _, st := range streams {
		_, _, done, err := st.Wait(ctx)
		if err != nil {
			return nil, wireError(err)
		}
		if done.Err != nil {
			return nil, wireError(done.Err)
		}
		out.Tokens += done.Usage.PromptTokens
		out.Cached += done.Usage.CachedPromptTokens
	}
	return out, nil
}
