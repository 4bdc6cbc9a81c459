package serve

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/batchd/batchd/config"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/backends"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/tokenizer"
)

// cacheFileOf names the model's saved prefix cache and what it must match:
// the file's digest, the backend's numerics, the KV type and block size.
func cacheFileOf(cfg LoadSpec, m *model.Model, be backend.Backend, kv backend.KVTypes) (string, string) {
	if cfg.CacheDir == "" || cfg.NoPrefixCache {
		return "", ""
	}
	name := regexp.MustCompile(`[^A-Za-z0-9._-]`).ReplaceAllString(cfg.Name, "_")
	id := fmt.Sprintf("model %s; backend %s; kv %v; quant_dot %s; blocks of %d", m.Digest(), backends.Describe(be), kv,
		cfg.QuantDot, cfg.BlockSize)
	return filepath.Join(cfg.CacheDir, "prefix-cache-"+name+".bin"), id
}

// warmTokens tokenizes prompts as a submit's and renders chat prefixes.
func warmTokens(ctx context.Context, lm *LoadedModel, prompts []string, chats []wire.JSON) ([][]int, error) {
	var out [][]int
	for _, p := range prompts {
		toks, err := lm.Model.Tokenizer.Tokenize(ctx, p, tokenizer.Options{AddSpecial: true, ParseSpecial: true})
		if err != nil {
			return nil, wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
		}
		out = append(out, toks)
	}
	for i, m := range chats {
		if lm.Chat == nil {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "chat %d: the model has no chat template", i)
		}
		toks, _, err := chatPrompt(ctx, lm, Conversation{Messages: m})
		if err != nil {
			return nil, err
		}
		out = append(out, toks)
	}
	return out, nil
}

// pinPrefixes pins the configured prefixes in the default model's cache.
func (svc *Service) pinPrefixes(lm *LoadedModel, pc config.PrefixCacheConfig) error {
	prompts, chats := pc.Pin, []wire.JSON(nil)
	if pc.PinFile != "" {
		p, c, err := config.ReadPinFile(pc.PinFile)
		if err != nil {
			return fmt.Errorf("prefix_cache.pin_file: %w", err)
		}
		prompts, chats = append(prompts, p...), c
	}
	if len(prompts)+len(chats) == 0 {
		return nil
	}
	toks, err := warmTokens(context.Background(), lm, prompts, chats)
	if err != nil {
		return fmt.Errorf("prefix_cache.pin: %w", err)
	}
	lm.Engine.SetPins(toks)
	svc.log.Info("prefix cache: pinning", "prefixes", len(toks))
	return nil
}

var _ ipc.Warmer = (*Service)(nil)

// Warm prefills each prompt and chat prefix into the model's prefix cache
// (bulk channel, the user's cap), generating nothing.
func (svc *Service) Warm(ctx context.Context, p ipc.Peer, w *wire.Warm) (*wire.Warm, error) {
	if err := svc.waitReady(ctx); err != nil {
		return nil, err
	}
	if n := len(w.Prompts) + len(w.Messages); n == 0 || n > wire.MaxWarmEntries {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "warm: %d prompts and chats: want 1 to %d", n, wire.MaxWarmEntries)
	}
	lm, lease, err := svc.acquireModel(ctx, w.Model, nil)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	toks, err := warmTokens(ctx, lm, w.Prompts, w.Messages)
	if err != nil {
		return nil, err
	}
	streams := make([]*engine.Stream, len(toks))
	for i, t := range toks {
		if streams[i], err = lm.Engine.Submit(ctx, engine.Request{Tokens: t, Prefill: true, Owner: p.UID, Channel: "bulk"}); err != nil {
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
