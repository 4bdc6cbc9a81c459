package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/model"
)

// EngineConfig says which model to load and how to size the engine around it.
type EngineConfig struct {
	Model     string // model file (GGUF or llama2.c)
	Tokenizer string // llama2.c tokenizer file, for llama2.c checkpoints
	Format    string // "", "gguf" or "llama2c"

	BlockSize     int   // tokens per KV block; default 16
	KVBlocks      int   // KV blocks; 0 = enough for MaxNumSeqs full contexts, capped by KVMemoryCap
	KVMemoryCap   int64 // bytes the default KV size may take; default 2 GiB
	Threads       int   // CPU threads; 0 = all
	NoPrefixCache bool

	Scheduler engine.SchedulerConfig
	MaxQueue  int
}

// Runtime is a loaded model with its backend and a running engine loop.
type Runtime struct {
	Model  *model.Model
	Engine *engine.Engine
	cpu    *model.CPU
	cancel context.CancelFunc
}

// OpenEngine loads the model, sizes the KV pool, and starts the engine loop.
// Close stops the loop, ending what is live, and releases the model.
func OpenEngine(cfg EngineConfig, log *slog.Logger) (*Runtime, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("%w: no model file given (--model)", engine.ErrInvalidArgument)
	}
	m, err := model.Load(cfg.Model, model.LoadOptions{Format: cfg.Format, Tokenizer: cfg.Tokenizer, Logger: log})
	if err != nil {
		return nil, err
	}
	if cfg.BlockSize <= 0 {
		cfg.BlockSize = 16
	}
	sc := cfg.Scheduler
	if sc.MaxNumSeqs <= 0 {
		sc.MaxNumSeqs = 64
	}
	if cfg.KVBlocks <= 0 {
		cfg.KVBlocks = DefaultKVBlocks(m.Config, cfg.BlockSize, sc.MaxNumSeqs, cfg.KVMemoryCap)
	}
	cpu, err := model.NewCPU(m, model.CPUOptions{NumBlocks: cfg.KVBlocks, BlockSize: cfg.BlockSize, Threads: cfg.Threads})
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	e, err := engine.New(engine.Options{Model: m, Backend: cpu, NumBlocks: cfg.KVBlocks, BlockSize: cfg.BlockSize,
		DisablePrefixCaching: cfg.NoPrefixCache, Scheduler: sc, MaxQueue: cfg.MaxQueue, Logger: log})
	if err != nil {
		return nil, errors.Join(err, cpu.Close(), m.Close())
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = e.Run(ctx) }()
	log.Info("model loaded", "model", m.Path, "format", m.Format, "dim", m.Config.Dim, "layers", m.Config.Layers,
		"vocab", m.Config.Vocab, "context", m.Config.Context, "kv_blocks", cfg.KVBlocks, "block_size", cfg.BlockSize,
		"kv_bytes", int64(cfg.KVBlocks)*int64(cfg.BlockSize)*int64(m.Config.KVBytesPerToken()))
	return &Runtime{Model: m, Engine: e, cpu: cpu, cancel: cancel}, nil
}

// DefaultKVBlocks sizes the pool for seqs full-context sequences, capped at
// capBytes of KV memory (2 GiB when zero) but never below one full context.
func DefaultKVBlocks(c model.Config, blockSize, seqs int, capBytes int64) int {
	if capBytes <= 0 {
		capBytes = 2 << 30
	}
	perSeq := (c.Context + blockSize - 1) / blockSize
	blockBytes := int64(blockSize) * int64(c.KVBytesPerToken())
	n := min(int64(perSeq*max(seqs, 1)), capBytes/blockBytes)
	return int(max(n, int64(perSeq)))
}

// Close stops the engine loop and releases the backend and the model.
func (r *Runtime) Close() error {
	r.cancel()
	<-r.Engine.Done()
	return errors.Join(r.cpu.Close(), r.Model.Close())
}
