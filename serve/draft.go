package serve

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/backends"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/model"
)

// loadedDraft is a target's draft model: its file and backend, on the
// target's threads, with a KV pool of as many tokens as the target's.
type loadedDraft struct {
	m  *model.Model
	be backend.Backend
}

// close releases the draft (nil: nothing to release); before the
// target's backend, whose threads it runs on.
func (d *loadedDraft) close() error {
	if d == nil {
		return nil
	}
	return errors.Join(d.be.Close(), d.m.Close())
}

// openDraft loads cfg.DraftModel for speculative method "draft" (which a
// draft model implies when no method is named) and sets
// cfg.Speculative.Draft. Its weights and KV are beside the plan's: a draft
// is a small or low-bit model, and its pool holds as many tokens as the
// target's.
func openDraft(cfg *LoadSpec, target *model.Model, be backend.Backend, kv backend.KVTypes, log *slog.Logger) (*loadedDraft, error) {
	spec := &cfg.Speculative
	if spec.Method == "none" || spec.Method == "off" { // named off: a draft model of [engine]'s stays unloaded
		spec.Method = ""
		return nil, nil
	}
	if cfg.DraftModel != "" && spec.Method == "" {
		spec.Method = "draft"
	}
	switch {
	case spec.Method != "draft":
		if cfg.DraftModel != "" {
			return nil, fmt.Errorf("%w: a draft model (%s) with speculative method %q: a draft model drafts with method draft",
				engine.ErrInvalidArgument, cfg.DraftModel, spec.Method)
		}
		return nil, nil
	case cfg.DraftModel == "":
		return nil, fmt.Errorf("%w: speculative method draft needs a draft model (draft_model, --draft-model)", engine.ErrInvalidArgument)
	}
	dm, err := model.Load(cfg.DraftModel, model.LoadOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("draft model: %w", err)
	}
	if err := engine.SameVocabulary(target, dm); err != nil {
		return nil, errors.Join(err, dm.Close())
	}
	// A windowed target's blocks hold one layer group: the draft's pool
	// holds as many tokens as the target's would with every layer in a block.
	blocks := cfg.KVBlocks
	if lay := target.Config.Layout(Windowed(target)); lay.Tables > 0 {
		blocks = max(1, blocks*lay.Slots/target.Config.AttnLayers())
	}
	dbe, err := backends.Open(cfg.Backend, dm, backend.Options{NumBlocks: blocks, BlockSize: cfg.BlockSize,
		Threads: cfg.Threads, KV: kv, Kernels: cfg.Kernels, QuantDot: cfg.QuantDot, ShareThreads: be})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("draft model: %w", err), dm.Close())
	}
	spec.Draft = &engine.DraftModel{Model: dm, Backend: dbe, NumBlocks: blocks}
	log.Info("draft model loaded", "draft_model", dm.Path, "dim", dm.Config.Dim, "layers", dm.Config.Layers,
		"draft_tokens", spec.Tokens, "backend", backends.Describe(dbe))
	return &loadedDraft{m: dm, be: dbe}, nil
}
