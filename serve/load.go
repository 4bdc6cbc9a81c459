package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/backend/backends"
	"github.com/batchd/batchd/chat"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/hwprofile"
	"github.com/batchd/batchd/model"
)

// LoadSpec says which model to load and how to size the engine around it.
type LoadSpec struct {
	Model     string // model file (GGUF or llama2.c)
	Tokenizer string // llama2.c tokenizer file, for llama2.c checkpoints
	Format    string // "", "gguf" or "llama2c"
	// ChatTemplate: a built-in template name or a Jinja file; "" is the model's.
	ChatTemplate string
	// ChatTemplateTimeout bounds one render of the chat template; 0 is
	// chat's default (2s).
	ChatTemplateTimeout time.Duration
	// ParseSpecialInMessages lets chat messages spell control tokens.
	ParseSpecialInMessages bool
	// ToolFormat: a tool-call format name; "" or "auto" detects it.
	ToolFormat string
	// Name is the model's name in requests and lists.
	Name string
	// KVTokens caps the KV pool (tokens) below the plan's, so that models
	// loaded together share the memory; 0 is KVShareSeqs sequences of the
	// model's context (at most multiModelKVContext each), or the plan's
	// when that is 0 too.
	KVTokens, KVShareSeqs int
	// Context caps each request's prompt plus output (0: the model's).
	Context int
	// IDs and Gate are shared by the engines of one daemon: request ids
	// unique across models, and one forward pass at a time.
	IDs  *atomic.Uint64
	Gate *engine.Turns

	// Zero values below are planned from the hardware profile (hwprofile).
	BlockSize     int // tokens per KV block
	KVBlocks      int // KV blocks
	Threads       int // CPU threads
	NoPrefixCache bool
	// The K/V types (backend.ParseKV): both, then K's or V's alone.
	KVCacheType, KVCacheTypeK, KVCacheTypeV string
	QuantDot                                string // "float" (default) or "int8" (backend.Options.QuantDot)
	ProfilesDir                             string // extra hardware profiles (*.toml); "" for the built-in table only
	Backend                                 string // backend name (backends.Names); "" is cpu
	Kernels                                 string // the backend's kernel family ("" is the best the machine has)

	Scheduler sched.Config
	MaxQueue  int
	Observer  engine.Observer    // metrics sink, may be nil
	KVEvents  engine.KVEventSink // the prefix cache's events, may be nil
	// Speculative: speculative decoding (engine.SpecConfig; Method "" off).
	Speculative engine.SpecConfig
	// DraftModel is the draft model's file for Speculative.Method "draft"
	// (it implies that method when none is named).
	DraftModel string
	Channels   map[string]engine.ChannelPolicy
	// Adaptive moves the effective limits with the load, below the plan's;
	// TTFTTarget and ITLTarget are its latency objectives.
	Adaptive              bool
	TTFTTarget, ITLTarget time.Duration
	// CacheDir keeps the model's prefix cache across restarts and sleeps
	// (a file per model under it, at most CacheMaxBytes); "" does not.
	CacheDir      string
	CacheMaxBytes int64
}

// LoadedModel is a loaded model with its backend, chat template and tool
// formats, and a running engine loop.
type LoadedModel struct {
	Name string // the model's name in requests and lists
	// ContextLimit is the model's cap on a request's prompt plus output
	// ([models.NAME] context); 0 is the model's context.
	ContextLimit int
	Model        *model.Model
	Engine       *engine.Engine
	Plan         hwprofile.Plan
	Detection    hwprofile.Detection
	// Chat renders chat requests; nil when the model has no usable
	// template, and ChatErr says why.
	Chat    *chat.Template
	ChatErr error
	// ParseSpecialInMessages: model.parse_special_in_messages.
	ParseSpecialInMessages bool
	// Tools is how the model writes tool calls and reasons (detected
	// from the chat template unless configured).
	Tools   toolSupport
	backend backend.Backend
	draft   *loadedDraft // the draft model, when it speculates with one
	cancel  context.CancelFunc
}

// Open loads the model, sizes the KV pool, and starts the engine loop.
// Close stops the loop, ending what is live, and releases the model.
func Open(cfg LoadSpec, log *slog.Logger) (*LoadedModel, error) {
	p, err := prepareEngine(cfg, log)
	if err != nil {
		return nil, err
	}
	return p.start()
}

// preparedEngine is a model opened (mapped, not read) and planned: what it
// will hold is known before its KV memory is allocated.
type preparedEngine struct {
	cfg     LoadSpec
	log     *slog.Logger
	m       *model.Model
	tmpl    *chat.Template
	chatErr error
	det     hwprofile.Detection
	plan    hwprofile.Plan
}

// prepareEngine opens the model file, compiles its chat template and
// plans its memory; start (or abort) follows.
func prepareEngine(cfg LoadSpec, log *slog.Logger) (*preparedEngine, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("%w: no model file given (--model)", engine.ErrInvalidArgument)
	}
	m, err := model.Load(cfg.Model, model.LoadOptions{Format: cfg.Format, Tokenizer: cfg.Tokenizer, Logger: log})
	if err != nil {
		return nil, err
	}
	tmpl, chatErr, err := ChatTemplate(cfg.ChatTemplate, m, chat.Limits{Time: cfg.ChatTemplateTimeout})
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	if chatErr != nil && m.ChatTemplate != "" {
		log.Warn("chat requests will be refused", "err", chatErr)
	}
	det, plan, err := PlanFor(m, cfg)
	kvCap, seqLen := cfg.KVTokens, min(m.Config.Context, multiModelKVContext)
	if cfg.Context > 0 {
		seqLen = min(m.Config.Context, cfg.Context)
	}
	if kvCap == 0 && cfg.KVShareSeqs > 0 {
		kvCap = cfg.KVShareSeqs * seqLen
	}
	if err == nil && kvCap > 0 && plan.KVTokens > kvCap && cfg.KVBlocks == 0 {
		cfg.KVBlocks = max(1, (kvCap+plan.BlockSize-1)/plan.BlockSize)
		det, plan, err = PlanFor(m, cfg)
	}
	if err != nil {
		return nil, errors.Join(err, closeChat(tmpl), m.Close())
	}
	return &preparedEngine{cfg: cfg, log: log, m: m, tmpl: tmpl, chatErr: chatErr, det: det, plan: plan}, nil
}

// bytes is the memory the engine holds once started: weights, KV pool
// and the activations' reserve.
func (p *preparedEngine) bytes() int64 {
	return p.plan.WeightBytes + int64(p.plan.KVBlocks)*int64(p.plan.BlockSize)*int64(p.plan.KVBytesPerToken) +
		p.plan.ActivationReserve
}

func (p *preparedEngine) abort() { _ = errors.Join(closeChat(p.tmpl), p.m.Close()) }

// KV is the K and V types the spec asks for.
func (s LoadSpec) KV() (backend.KVTypes, error) {
	return backend.ParseKV(s.KVCacheType, s.KVCacheTypeK, s.KVCacheTypeV)
}

// start allocates the backend and its KV pool and starts the engine loop.
func (p *preparedEngine) start() (*LoadedModel, error) {
	cfg, log, m, tmpl, plan, det := p.cfg, p.log, p.m, p.tmpl, p.plan, p.det
	for _, w := range plan.Warnings {
		log.Warn("hardware plan: "+w, "component", "hwprofile")
	}
	cfg.BlockSize, cfg.KVBlocks, cfg.Threads = plan.BlockSize, plan.KVBlocks, plan.Threads
	sc := cfg.Scheduler
	sc.MaxNumSeqs, sc.MaxNumBatchedTokens = plan.MaxNumSeqs, plan.MaxNumBatchedTokens
	kv, err := cfg.KV()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w: %w", engine.ErrInvalidArgument, err), closeChat(tmpl), m.Close())
	}
	be, err := backends.Open(cfg.Backend, m, backend.Options{NumBlocks: cfg.KVBlocks, BlockSize: cfg.BlockSize, Windowed: plan.KVWindowTables > 0,
		Threads: cfg.Threads, KV: kv, Kernels: cfg.Kernels, QuantDot: cfg.QuantDot, MaxStates: 2 * sc.MaxNumSeqs, MaxSnapshots: 2 * sc.MaxNumSeqs})
	if err != nil {
		return nil, errors.Join(err, closeChat(tmpl), m.Close())
	}
	var adaptive *sched.ControllerConfig
	if cfg.Adaptive {
		adaptive = &sched.ControllerConfig{MinSeqs: 1, MaxSeqs: sc.MaxNumSeqs, MinTokens: min(64, sc.MaxNumBatchedTokens),
			MaxTokens: sc.MaxNumBatchedTokens, TTFTTarget: cfg.TTFTTarget, ITLTarget: cfg.ITLTarget}
	}
	draft, err := openDraft(&cfg, m, be, kv, log)
	if err != nil {
		return nil, errors.Join(err, closeChat(tmpl), be.Close(), m.Close())
	}
	cacheFile, cacheID := cacheFileOf(cfg, m, be, kv)
	e, err := engine.New(engine.Options{Adaptive: adaptive, Model: m, Backend: be, NumBlocks: cfg.KVBlocks, BlockSize: cfg.BlockSize, Windowed: plan.KVWindowTables > 0,
		DisablePrefixCaching: cfg.NoPrefixCache, Scheduler: sc, MaxQueue: cfg.MaxQueue, Logger: log, Observer: cfg.Observer,
		Channels: cfg.Channels, IDs: cfg.IDs, Gate: cfg.Gate, CacheFile: cacheFile, CacheIdentity: cacheID, CacheMaxBytes: cfg.CacheMaxBytes,
		KVEvents: cfg.KVEvents, Speculative: cfg.Speculative})
	if err != nil {
		return nil, errors.Join(err, closeChat(tmpl), draft.close(), be.Close(), m.Close())
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = e.Run(ctx) }()
	log.Info("model loaded", "model", m.Path, "format", m.Format, "dim", m.Config.Dim, "layers", m.Config.Layers,
		"vocab", m.Config.Vocab, "context", m.Config.Context, "backend", backends.Describe(be))
	log.Info("hardware plan", "device", plan.Device, "profile", plan.Profile, "kv_blocks", plan.KVBlocks,
		"block_size", plan.BlockSize, "kv_bytes", int64(plan.KVTokens)*int64(plan.KVBytesPerToken),
		"max_context", plan.MaxContext, "full_context_seqs", plan.FullContextSeqs, "max_num_seqs", plan.MaxNumSeqs,
		"max_num_batched_tokens", plan.MaxNumBatchedTokens, "threads", plan.Threads, "fallbacks", det.Fallbacks)
	tools := detectTools(tmpl, cfg.ToolFormat)
	if tmpl != nil {
		log.Info("chat template", "template", tmpl.Name(), "tool_format", tools.format, "tool_format_label", tools.format.Label(),
			"reasoning", tools.reasoning != nil)
	}
	return &LoadedModel{Name: cfg.Name, ContextLimit: cfg.Context, Model: m, Engine: e, Plan: plan, Detection: det, Chat: tmpl, ChatErr: p.chatErr,
		ParseSpecialInMessages: cfg.ParseSpecialInMessages, Tools: tools, backend: be, draft: draft, cancel: cancel}, nil
}

func closeChat(t *chat.Template) error {
	if t != nil {
		return t.Close()
	}
	return nil
}

// PlanFor detects the machine and plans the engine for model m, honouring
// what cfg sets (clamped, with warnings, where it does not fit).
func PlanFor(m *model.Model, cfg LoadSpec) (hwprofile.Detection, hwprofile.Plan, error) {
	det := hwprofile.Detect(context.Background(), hwprofile.DefaultGPUProbers(), hwprofile.HostCPU{}, 0)
	profiles := hwprofile.BuiltinProfiles()
	if cfg.ProfilesDir != "" {
		var err error
		if profiles, err = hwprofile.LoadProfiles(cfg.ProfilesDir); err != nil {
			return det, hwprofile.Plan{}, err
		}
	}
	kv, err := cfg.KV()
	if err != nil {
		return det, hwprofile.Plan{}, err
	}
	plan, err := hwprofile.MakePlan(det, profiles, ShapeOf(m), hwprofile.Requested{BlockSize: cfg.BlockSize,
		KVBlocks: cfg.KVBlocks, MaxNumSeqs: cfg.Scheduler.MaxNumSeqs,
		MaxNumBatchedTokens: cfg.Scheduler.MaxNumBatchedTokens, Threads: cfg.Threads}, "cpu", hwprofile.KVStore{Type: kv.String(), Bytes32: kv.Bytes32()})
	return det, plan, err
}

// Windowed reports whether m's K and V are laid out in window groups: a
// model whose sliding-window layers see less than its context (gemma2
// and 3, gpt-oss) keeps them only for the window (model.KVLayout).
func Windowed(m *model.Model) bool {
	c := m.Config
	return c.SlidingWindow > 0 && c.SlidingWindow < c.Context
}

// ShapeOf describes a model for planning.
func ShapeOf(m *model.Model) hwprofile.ModelShape {
	c := m.Config
	// Every layer's K and V take the widest layer's room (gemma4's differ).
	kvHeads, headDim := c.KVHeads, c.HeadDim
	if c.Shapes != nil {
		kvHeads, headDim = 1, c.KVWidth()
	}
	s := hwprofile.ModelShape{Name: m.Path, Layers: c.Layers, KVHeads: kvHeads, HeadDim: headDim, Dim: c.Dim,
		QDim: c.Widest().QDim(), FFN: c.FFN, Vocab: c.Vocab, Context: c.Context, WeightBytes: m.FileBytes(), WholeText: c.NonCausal,
		Experts: c.MoE.Experts, Used: c.MoE.Used, ExpertFFN: c.MoE.FFN, SharedFFN: c.MoE.SharedFFN, ActiveBytes: int64(m.WeightBytes()),
		KVLayers: c.AttnLayers(), StateBytes: c.StateBytes()}
	if lay := c.Layout(Windowed(m)); lay.Tables > 0 {
		s.BlockLayers, s.WindowTables, s.Window = lay.Slots, lay.Tables, c.SlidingWindow
	}
	return s
}

// Close stops the engine loop and releases the backend and the model.
func (r *LoadedModel) Close() error {
	r.cancel()
	<-r.Engine.Done()
	if r.Chat != nil {
		_ = r.Chat.Close()
	}
	return errors.Join(r.draft.close(), r.backend.Close(), r.Model.Close())
}
