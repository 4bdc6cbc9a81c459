package engine

import (
	"cmp"
	"context"
	"fmt"
	"github.com/batchd/batchd/engine/sched"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/tokenizer"
)

// Options configure an Engine.
type Options struct {
	Model   *model.Model
	Backend backend.Backend // sized with the same NumBlocks and BlockSize

	NumBlocks int // KV blocks in the pool; required
	// Windowed: the backend lays K and V out in window groups
	// (backend.Options.Windowed), so the pool holds a sequence's sliding
	// groups' blocks only for its window.
	Windowed             bool
	BlockSize            int  // tokens per block; default 16
	DisablePrefixCaching bool // prefix caching is on unless this is set

	Scheduler sched.Config
	MaxQueue  int // requests waiting for admission before Submit returns ErrQueueFull; default 1024
	// Channels: per-channel budget share (for the slo policy), queue limit
	// and default deadline. Unlisted channels have none.
	Channels map[string]ChannelPolicy

	Logger   *slog.Logger
	Now      func() time.Time // clock; default time.Now
	Observer Observer         // metrics sink; default none
	// Adaptive turns on the adaptive controller within these bounds; nil
	// keeps the scheduler's limits fixed.
	Adaptive *sched.ControllerConfig
	// IDs gives request ids; engines of one process share one so that an
	// id names one request whichever model runs it. nil: the engine's own.
	IDs *atomic.Uint64
	// Gate, when set, is held for each forward pass: engines sharing one
	// take turns on the machine's cores, a step each (see Turns).
	Gate *Turns
	// CacheFile, when set, keeps the prefix cache across restarts and
	// sleeps: written at shutdown and before a sleep, read at start and
	// after a wake when its CacheIdentity (the model's and the numerics')
	// matches; another or a corrupt file is ignored with a log line. The
	// backend must be a backend.BlockStore.
	CacheFile, CacheIdentity string
	// CacheMaxBytes bounds the saved cache (its most recently used blocks
	// are kept), so that a save at shutdown fits the stop timeout; 0 is
	// no bound.
	CacheMaxBytes int64
	// KVEvents, when set, receives the prefix cache's changes at every step
	// boundary (kvcache.Event; vLLM's KV events for a router). It is called
	// from the loop and must not block.
	KVEvents KVEventSink
	// Speculative turns on speculative decoding (speculate.go).
	Speculative SpecConfig
}

// KVEventSink takes the prefix cache's events; see Options.KVEvents.
type KVEventSink interface {
	KVEvents([]kvcache.Event)
}

// Engine owns the scheduler, the KV pool and the backend, and runs them from
// one goroutine (Run). Submit, Cancel and Stats are safe from any goroutine;
// they touch only the inbox and the published snapshot, never the loop's state.
//
// Lock order: mu is a leaf lock; it is never held across a forward pass or
// while pushing to a Stream.
type Engine struct {
	m       *model.Model
	backend backend.Backend
	pool    *kvcache.Pool
	// seqBlocks: the most main blocks one sequence can hold (all of the
	// pool's but what its window blocks take).
	seqBlocks int
	sched     *sched.Scheduler
	byRole    bool // the backend is backend.RoleAware: prompt chunks go first
	log       *slog.Logger
	now       func() time.Time
	obs       Observer
	wake      chan struct{}
	done      chan struct{}

	heartbeat atomic.Int64 // unix nanos of the loop's last turn
	asleep    atomic.Bool  // KV memory released (Sleep)
	afterStep func()       // test hook, run by the loop at every step boundary

	mu           sync.Mutex
	inbox        []*reqState
	cancels      []cancelReq
	newCfg       *sched.Config
	sleepReq     bool
	warm         warmState // pinned prefixes and the saved prefix cache (warm.go)
	gauges       gaugeVals // the published figures a scraper reads without mu
	kvEvents     KVEventSink
	spec         speculation // loop-owned
	sleepWeights bool
	live         map[uint64]*reqState
	pending      int            // accepted, not yet scheduled
	pendingC     map[string]int // the same, by channel
	channels     map[string]ChannelPolicy
	maxQueue     int
	ids          *atomic.Uint64
	seat         *Seat   // at the shared Turns; nil: the cores are the engine's
	prefillRate  float64 // prompt tokens per second of forward (loop only)
	closed       bool
	drained      chan struct{} // closed when draining and nothing is live
	snap         Stats
	rec          recorder

	states map[uint64]*reqState // the loop's per-request state, by sequence id
	gvocab constrainVocab       // the vocabulary as grammars see it, built at the first constrained request

	ctl control // adaptive control, owned by the loop
	// rstates: the sequences a recurrent backend keeps state for (loop-owned).
	rstates recurrentStates
}

// speculation is the loop's speculative decoding: its config, the draft
// model, the cost model that decides whether drafting pays, its counters
// (published to snap: drafted tokens, those kept, the shares that
// verified a draft) and propose's scratch.
type speculation struct {
	SpecConfig
	drafter               *drafter // Method "draft"'s model; nil otherwise
	cost                  draftCost
	drafted, kept, shares uint64
	want                  []*sched.Sequence
	ks                    []int
}

// control is the adaptive controller and what it observes between its
// decisions: since at, the requests submitted and the forward time.
type control struct {
	c         *sched.Controller
	at        time.Time
	submitted uint64
	busy      time.Duration
}

// ChannelPolicy is one QoS channel's share and limits.
type ChannelPolicy struct {
	Share      float64       // of each step's admission budget, under the slo policy
	QueueLimit int           // waiting requests of this channel; 0 = only MaxQueue
	Deadline   time.Duration // default deadline for the first token; 0 = none
	// OwnSteps: the channel's sequences run in forward steps of their own,
	// never batched with another channel's (an isolated channel's option:
	// no timing one tenant could read off another's batch).
	OwnSteps bool
}

type cancelReq struct {
	id     uint64
	reason FinishReason
	err    error
}

// reqState is the loop's per-request state.
type reqState struct {
	req        Request
	seq        *sched.Sequence
	stream     *Stream
	sampler    *sample.Sampler
	pinAs      kvcache.SeqID // a pinned prefix's: its blocks are kept under this id once prefilled
	detok      *tokenizer.Detokenizer
	stop       stopMatcher
	stopIDs    []int
	raw        []float32        // the logits row before sampling, for logprobs
	gm         *grammar.Matcher // the request's place in its grammar; nil when unconstrained
	hold       *grammarHold     // what holds the grammar back (lazy, reasoning); nil: nothing
	top        []int            // scratch of sampleConstrained
	scheduled  bool
	firstToken time.Time
	lastToken  time.Time
	ended      bool           // finish ran
	pool       *pooler        // an embedding's hidden states; nil for generation
	embedding  []float32      // its vector, once the prompt has run
	done       *Event         // terminal event held until a request-level batch ends
	reason     FinishReason   // of done
	cancelled  bool           // a cancel was acknowledged; guarded by Engine.mu
	spec       specState      // speculative drafting's record
	chain      []kvcache.Hash // prefix-cache hashes of its full blocks (recurrent states' keys)
	// For Requests, read outside the loop: set at Submit, or atomic.
	arrival   time.Time
	started   atomic.Bool
	generated atomic.Int32
}

// newPool is the KV pool o asks for (with window blocks where the backend
// lays K and V out in window groups).
func newPool(o Options) (*kvcache.Pool, error) {
	po := kvcache.Options{NumBlocks: o.NumBlocks, BlockSize: o.BlockSize, PrefixCaching: !o.DisablePrefixCaching}
	if lay := o.Model.Config.Layout(o.Windowed); lay.Tables > 0 {
		po.Window, po.WindowTables = o.Model.Config.SlidingWindow, lay.Tables
	}
	pool, err := kvcache.New(po)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return pool, nil
}

// seqBlocks is the most main blocks one sequence can hold: the pool's,
// less the window blocks it holds beside them (its window and one step's
// chunk).
func seqBlocks(o Options, pool *kvcache.Pool) int {
	if !pool.Windowed() {
		return pool.NumBlocks()
	}
	step := o.Scheduler.WithDefaults().MaxNumBatchedTokens
	if o.Adaptive != nil {
		step = max(step, o.Adaptive.MaxTokens)
	}
	// Up to a window and a step's blocks in each sliding group, never more
	// than the sequence's main blocks (as hwprofile's longestSeq plans).
	k, win := pool.WindowTables(), pool.BlocksFor(o.Model.Config.SlidingWindow+step)+1
	if n := pool.NumBlocks(); n <= (1+k)*win {
		return n / (1 + k)
	}
	return pool.NumBlocks() - k*win
}

// New builds an engine; call Run to start its loop.
func New(o Options) (*Engine, error) {
	if o.Model == nil || o.Backend == nil {
		return nil, fmt.Errorf("%w: engine needs a model and a backend", ErrInvalidArgument)
	}
	if o.BlockSize == 0 {
		o.BlockSize = kvcache.DefaultBlockSize
	}
	rec := recurrentBackend(o.Backend)
	if rec != nil {
		o = recurrentOptions(o)
	}
	pool, err := newPool(o)
	if err != nil {
		return nil, err
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 1024
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	var so sched.Options
	if o.Model.Config.NonCausal {
		if bd, ok := o.Backend.(backend.Bidirectional); !ok || !bd.Bidirectional() {
			return nil, fmt.Errorf("%w: %s attends bidirectionally and this backend runs only causal models",
				ErrInvalidArgument, o.Model.Config.Arch)
		}
		so.Whole = true
	}
	if ra, ok := o.Backend.(backend.RoleAware); ok && ra.ByRole() {
		so.PromptOnly = true
	}
	if rec != nil {
		so.Resume = resumable(pool, rec)
	}
	e := &Engine{
		m: o.Model, backend: o.Backend, pool: pool, seqBlocks: seqBlocks(o, pool), sched: sched.New(o.Scheduler, pool, so), byRole: so.PromptOnly,
		log: o.Logger.With("component", "engine"), now: o.Now, obs: o.Observer,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		live: map[uint64]*reqState{}, states: map[uint64]*reqState{}, maxQueue: o.MaxQueue, pendingC: map[string]int{}, channels: o.Channels,
	}
	e.ids = o.IDs
	if rec != nil {
		e.rstates = recurrentStates{b: rec, held: map[uint64]int{}}
	}
	if o.Gate != nil {
		e.seat = o.Gate.Seat()
	}
	if e.ids == nil {
		e.ids = new(atomic.Uint64)
	}
	e.sched.SetConfig(e.withShares(o.Scheduler))
	if o.Adaptive != nil {
		sc := e.sched.Config()
		e.ctl.c = sched.NewController(*o.Adaptive, sc.MaxNumSeqs, sc.MaxNumBatchedTokens)
		e.ctl.at = e.now()
		st := e.ctl.c.State() // its series exist from the start, not after the first interval
		e.snap.Controller = &st
	}
	e.warm.file, e.warm.identity, e.warm.maxBytes = o.CacheFile, o.CacheIdentity, o.CacheMaxBytes
	e.loadCache("start")
	if err := e.setupSpec(o); err != nil {
		return nil, err
	}
	if o.KVEvents != nil && !so.Whole { // an encoder's blocks are never shared
		e.kvEvents = o.KVEvents
		pool.RecordEvents()
	}
	e.heartbeat.Store(e.now().UnixNano())
	e.publish()
	return e, nil
}

// setupSpec starts speculative decoding as o asks.
func (e *Engine) setupSpec(o Options) error {
	if o.Speculative.Method == "" {
		return nil
	}
	if _, err := sched.ParseSpecMethod(o.Speculative.Method); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	e.spec.SpecConfig = o.Speculative.withDefaults()
	if e.spec.Method == "draft" {
		d, err := newDrafter(e.spec.Draft, o.Model, o.BlockSize)
		if err != nil {
			return err
		}
		e.spec.drafter = d
	}
	return nil
}

// Model returns the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// Heartbeat returns when the step loop last completed a turn; a wedged loop stops it.
func (e *Engine) Heartbeat() time.Time { return time.Unix(0, e.heartbeat.Load()) }

// Submit validates r and queues it without blocking. The stream ends with
// exactly one terminal event. Cancelling ctx cancels the request.
func (e *Engine) Submit(ctx context.Context, r Request) (*Stream, error) {
	r, err := prepare(r, e.m, e.seqBlocks, e.pool.BlockSize())
	if err != nil {
		e.mu.Lock()
		e.rec.rejected++
		e.mu.Unlock()
		return nil, err
	}
	stops := slices.Clone(r.StopTokenIDs)
	if !r.IgnoreEOS {
		stops = append(stops, e.m.StopTokens...)
	}
	rs := &reqState{req: r, sampler: sample.New(r.Sampling), stop: stopMatcher{stops: r.Stop}, stopIDs: stops,
		detok: tokenizer.NewDetokenizer(e.m.Tokenizer, r.Tokens[len(r.Tokens)-1])}
	rs.sampler.PromptLen = len(r.Tokens)
	if r.Grammar != nil {
		rs.gm = r.Grammar.NewMatcher()
		rs.hold = newHold(r)
	}
	rs.detok.Keep(r.Preserve)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if n := e.pending; n >= e.maxQueue {
		e.rec.rejected++
		e.mu.Unlock()
		return nil, fmt.Errorf("%w (%d waiting)", ErrQueueFull, n)
	}
	cp := e.channels[r.Channel]
	if n := e.pendingC[r.Channel]; cp.QueueLimit > 0 && n >= cp.QueueLimit {
		e.rec.rejected++
		e.mu.Unlock()
		return nil, fmt.Errorf("%w (%d waiting in channel %s)", ErrQueueFull, n, r.Channel)
	}
	id := e.ids.Add(1)
	now := e.now()
	rs.seq = &sched.Sequence{ID: id, Priority: r.Priority, Channel: r.Channel, Owner: r.Owner, Arrival: now, Tokens: r.Tokens,
		PromptLen: len(r.Tokens), MaxTokens: r.MaxTokens, Embed: r.Embed != nil, Prefill: r.Prefill, Salt: kvcache.Salt(r.CacheSalt)}
	if r.Embed != nil {
		rs.pool = &pooler{embed: *r.Embed, head: e.m.Rank, dense: e.m.Dense}
	}
	if d := cmp.Or(r.Deadline, cp.Deadline); d > 0 {
		rs.seq.Deadline = now.Add(d)
	}
	rs.stream = newStream(id)
	rs.arrival = now
	e.live[id] = rs
	e.pending++
	e.pendingC[r.Channel]++
	e.rec.submitted++
	e.inbox = append(e.inbox, rs)
	e.mu.Unlock()
	rs.stream.setStop(context.AfterFunc(ctx, func() { _ = e.cancel(id, FinishCancelled, ctx.Err()) }))
	e.poke()
	return rs.stream, nil
}

// Cancel ends request id at the next step boundary with finish reason "cancelled".
func (e *Engine) Cancel(id uint64) error { return e.cancel(id, FinishCancelled, nil) }

// A nil error is a promise: the request's terminal event will say
// "cancelled", even if the loop finishes it for another reason before it
// sees the cancel (deliver keeps the promise). A request that has already
// ended, or is already being cancelled, is ErrNotFound: that cancel did nothing.
func (e *Engine) cancel(id uint64, reason FinishReason, err error) error {
	e.mu.Lock()
	rs, ok := e.live[id]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("%w: request %d is not running", ErrNotFound, id)
	}
	if rs.cancelled {
		e.mu.Unlock()
		return fmt.Errorf("%w: request %d is already being cancelled", ErrNotFound, id)
	}
	rs.cancelled = true
	e.cancels = append(e.cancels, cancelReq{id, reason, err})
	e.mu.Unlock()
	e.poke()
	return nil
}

// Owner returns the Owner of a live request.
func (e *Engine) Owner(id uint64) (uint32, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rs, ok := e.live[id]
	if !ok {
		return 0, false
	}
	return rs.req.Owner, true
}

// SetScheduler replaces the scheduler's knobs from the next step (hot reload).
func (e *Engine) SetScheduler(cfg sched.Config) {
	e.mu.Lock()
	cfg = e.withShares(cfg)
	e.newCfg = &cfg
	e.mu.Unlock()
	e.poke()
}

// withShares fills the channel shares from the channel policies.
func (e *Engine) withShares(cfg sched.Config) sched.Config {
	if cfg.OwnSteps == nil {
		for ch, p := range e.channels {
			if p.OwnSteps {
				if cfg.OwnSteps == nil {
					cfg.OwnSteps = map[string]bool{}
				}
				cfg.OwnSteps[ch] = true
			}
		}
	}
	if cfg.Shares == nil && len(e.channels) > 0 {
		cfg.Shares = map[string]float64{}
		for ch, p := range e.channels {
			if p.Share > 0 {
				cfg.Shares[ch] = p.Share
			}
		}
	}
	return cfg
}

// SetMaxQueue changes the waiting-queue limit (hot reload).
func (e *Engine) SetMaxQueue(n int) {
	e.mu.Lock()
	if n > 0 {
		e.maxQueue = n
	}
	e.mu.Unlock()
}

// Drain stops admission (Submit returns ErrClosed) and waits until every
// live request has ended or ctx is done.
func (e *Engine) Drain(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	if e.drained == nil {
		e.drained = make(chan struct{})
		if len(e.live) == 0 {
			close(e.drained)
		}
	}
	ch := e.drained
	e.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed when Run has returned.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Stats returns a snapshot; it never waits for the step loop.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.snap
	e.rec.fill(&s, e.now())
	s.Sleeping = e.asleep.Load()
	return s
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// gaugeVals are published at every step boundary as atomics.
type gaugeVals struct{ running, waiting, kvUsed atomic.Int64 }

// Gauges are the figures an endpoint picker scrapes every 50 ms: read
// from atomics the loop publishes, never through the engine's lock, so a
// scrape costs nothing while the engine is busy and never waits for it.
type Gauges struct {
	Running, Waiting int
	KVUsed, KVTotal  int // blocks
	BlockSize        int // tokens per block
}

// Gauges returns the latest published figures.
func (e *Engine) Gauges() Gauges {
	return Gauges{Running: int(e.gauges.running.Load()), Waiting: int(e.gauges.waiting.Load()),
		KVUsed: int(e.gauges.kvUsed.Load()), KVTotal: e.pool.NumBlocks(), BlockSize: e.pool.BlockSize()}
}
