package serve

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/serve/models"
)

// grammarCacheSize is how many compiled grammars a service keeps.
const grammarCacheSize = 64

// Access is what the service asks of the transports' access layer: the
// live policy (who is an admin) and the per-user request cap, which an
// embedding of many inputs draws on. *ipc.Server is one.
type Access interface {
	Policy() *ipc.Policy
	AcquireUser(p ipc.Peer) error
	ReleaseUser(p ipc.Peer)
}

// Options are a Service's fixed parts.
type Options struct {
	// Config is the configuration at start; Apply replaces its live part.
	Config config.Config
	// ConfigPath is the config file ("" without one): its directory's
	// profiles.d holds extra hardware profiles.
	ConfigPath string
	Logger     *slog.Logger
	// Observer, when set, is a loaded model's metrics sink.
	Observer func(model string) engine.Observer
	// KVEvents, when set, is a loaded model's prefix-cache event sink (nil
	// for none); backend names where its KV lives.
	KVEvents func(model, backend string) engine.KVEventSink
}

// Service is the serving layer: everything that happens to a request
// before and after the engine. It implements ipc.Backend's request side
// (Submit, Cancel, Render, Embed, Warm, the model list, loads and admin);
// the daemon adds health, stats and reload.
type Service struct {
	log      *slog.Logger
	opt      Options
	grammars *grammar.Cache
	access   Access
	// models loads and unloads the models; ids and gate are shared by
	// every model's engine; multi: models beside the default (KV shares).
	models  *models.Manager
	ids     atomic.Uint64
	gate    *engine.Turns
	multi   bool
	ready   chan struct{}
	closing atomic.Bool

	mu  sync.Mutex
	cfg config.Config // the live config
	// reloaded: Apply ran, so a model that starts now takes the live
	// scheduler knobs rather than its spec's.
	reloaded bool
	def      *LoadedModel // the default model, pinned; nil without one
}

// New makes the service and its models manager; nothing loads until Start.
// Lists answer at once; requests wait until MarkReady.
func New(o Options) (*Service, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	svc := &Service{log: o.Logger, opt: o, grammars: grammar.NewCache(grammarCacheSize), ready: make(chan struct{}), cfg: o.Config}
	if err := svc.newModels(o.Config); err != nil {
		return nil, err
	}
	return svc, nil
}

// SetAccess gives the service the access layer; before requests come.
func (svc *Service) SetAccess(a Access) { svc.access = a }

// MarkReady lets waiting requests through: the default model is loaded.
func (svc *Service) MarkReady() { close(svc.ready) }

// Drain refuses requests from now on (the daemon is shutting down).
func (svc *Service) Drain() { svc.closing.Store(true) }

// waitReady blocks until the default model is loaded: requests that
// arrive while it loads wait and are served.
func (svc *Service) waitReady(ctx context.Context) error {
	select {
	case <-svc.ready:
	case <-ctx.Done():
		return wire.Errorf(wire.CodeUnavailable, "gave up waiting for the model to load: %v", ctx.Err())
	}
	if svc.closing.Load() {
		return wire.Errorf(wire.CodeUnavailable, "batchd is shutting down")
	}
	return nil
}

// live returns the live config.
func (svc *Service) live() config.Config {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.cfg
}

// Apply makes next the live config (a reload's live part): every loaded
// model takes its scheduler knobs and queue limit, and later loads too.
func (svc *Service) Apply(next config.Config) {
	svc.mu.Lock()
	svc.cfg, svc.reloaded = next, true
	svc.mu.Unlock()
	for _, lm := range svc.Loaded() {
		lm.Engine.SetScheduler(svc.liveScheduler(next, lm))
		lm.Engine.SetMaxQueue(next.Engine.MaxQueue)
	}
}

// liveScheduler is next's scheduler knobs, zeros filled from the plan and
// max_num_seqs clamped to the KV blocks.
func (svc *Service) liveScheduler(next config.Config, lm *LoadedModel) sched.Config {
	sc := next.Scheduler()
	plan := lm.Plan
	if sc.MaxNumSeqs == 0 {
		sc.MaxNumSeqs = plan.MaxNumSeqs
	} else if sc.MaxNumSeqs > plan.KVBlocks {
		svc.log.Warn("max_num_seqs exceeds the KV blocks: clamped", "max_num_seqs", sc.MaxNumSeqs, "kv_blocks", plan.KVBlocks)
		sc.MaxNumSeqs = plan.KVBlocks
	}
	if sc.MaxNumBatchedTokens == 0 {
		sc.MaxNumBatchedTokens = plan.MaxNumBatchedTokens
	}
	return sc
}

// TTFTTarget is a channel's TTFT objective in the live config.
func (svc *Service) TTFTTarget(channel string) time.Duration {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.cfg.Channels[channel].TTFTTarget.Duration
}

// Default is the default model ([model]'s file), nil without one or
// before Start.
func (svc *Service) Default() *LoadedModel {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.def
}

// Loaded is every loaded model.
func (svc *Service) Loaded() []*LoadedModel {
	var out []*LoadedModel
	for _, i := range svc.models.Loaded() {
		if lm, ok := i.Instance.(*LoadedModel); ok {
			out = append(out, lm)
		}
	}
	return out
}

// Run unloads idle models past their keep_alive until ctx ends.
func (svc *Service) Run(ctx context.Context) { svc.models.Run(ctx, time.Second) }

// Close ends what is left with a terminal event and unloads every model.
func (svc *Service) Close() error { return svc.models.Close() }

// profilesDir is the config file's profiles.d ("" without a file).
func (svc *Service) profilesDir() string {
	if svc.opt.ConfigPath == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(svc.opt.ConfigPath), "profiles.d")
}

// SpecOf is the load spec the config gives [model]'s file (its engine
// knobs, channels and prefix-cache persistence); profilesDir adds
// hardware profiles.
func SpecOf(c config.Config, profilesDir string) LoadSpec {
	channels := map[string]engine.ChannelPolicy{}
	for name, ch := range c.Channels {
		channels[name] = engine.ChannelPolicy{Share: ch.Share, QueueLimit: ch.QueueLimit, Deadline: ch.Deadline.Duration, OwnSteps: ch.OwnSteps}
	}
	return LoadSpec{Model: c.Model.Path, Tokenizer: c.Model.Tokenizer, Format: c.Model.Format, ProfilesDir: profilesDir,
		ChatTemplate: c.Model.ChatTemplate, ChatTemplateTimeout: c.Model.ChatTemplateTimeout.Duration,
		ParseSpecialInMessages: c.Model.ParseSpecialInMessages, ToolFormat: c.Model.ToolFormat, Channels: channels,
		BlockSize: c.Engine.BlockSize, KVBlocks: c.Engine.KVBlocks, Threads: c.Engine.Threads,
		NoPrefixCache: !*c.Engine.PrefixCaching, KVCacheType: c.Engine.KVCacheType,
		KVCacheTypeK: c.Engine.KVCacheTypeK, KVCacheTypeV: c.Engine.KVCacheTypeV, QuantDot: c.Engine.QuantDot, Scheduler: c.Scheduler(),
		Speculative: engine.SpecConfig{Method: c.Engine.Speculative, Tokens: c.Engine.DraftTokens, MaxBatch: c.Engine.DraftMaxBatch},
		DraftModel:  c.Engine.DraftModel,
		MaxQueue:    c.Engine.MaxQueue, Adaptive: c.Engine.Adaptive == nil || *c.Engine.Adaptive,
		TTFTTarget: c.Channels["realtime"].TTFTTarget.Duration, ITLTarget: c.Channels["realtime"].ITLTarget.Duration,
		CacheDir: c.CacheDir(), CacheMaxBytes: c.PrefixCache.PersistMax()}
}
