// Package ipctest is the one fake of ipc.Backend (and of the access
// layer, Users) for the transports' tests: httpapi's and its Ollama
// routes'. It records what it was asked and answers with scripted text,
// tool calls or errors; it runs no model. (ipc's own tests keep a small
// fake inside the package: a test of package ipc cannot import a package
// that imports ipc.)
package ipctest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// Backend answers each submit with Text's deltas, then a terminal event.
type Backend struct {
	// Err, when set, is every Submit's error.
	Err error
	// State is Health's; "" is ready.
	State string
	// Delay comes before each delta.
	Delay time.Duration
	// Text gives a submit's deltas; nil: "tok0 ", "tok1 ", ... one per
	// max_tokens (3 when it is 0), ending "length" (or "cancelled" when
	// cancelled first).
	Text func(s *wire.Submit) []string
	// Finish is the finish reason after Text's deltas ("" is "length").
	Finish string
	// Calls, when set, are what a submit with tools ends with (finish
	// tool_calls, no text).
	Calls []wire.ToolCall
	// Prompt is each request's prompt ids (nil: [1 2]).
	Prompt []int

	mu      sync.Mutex
	submits []*wire.Submit
	peers   []ipc.Peer
	// Cancelled counts Cancel calls; Ended, the terminal events sent.
	Cancelled, Ended atomic.Int32
	nextID           atomic.Uint64
}

// Models is a Backend that also lists, loads and administers models and
// refuses embeddings: the optional interfaces, for routes that need them
// (a plain Backend lacks them, as a transport must cope with).
type Models struct {
	*Backend
	List []wire.ModelEntry // what Models lists
}

var (
	_ ipc.Backend     = (*Backend)(nil)
	_ ipc.ModelLister = Models{}
	_ ipc.ModelLoader = Models{}
	_ ipc.ModelAdmin  = Models{}
	_ ipc.Embedder    = Models{}
)

// Submits returns the submits received so far, and their peers.
func (b *Backend) Submits() ([]*wire.Submit, []ipc.Peer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*wire.Submit(nil), b.submits...), append([]ipc.Peer(nil), b.peers...)
}

// Submit records s and streams its answer.
func (b *Backend) Submit(ctx context.Context, p ipc.Peer, s *wire.Submit) (ipc.RequestStream, error) {
	if b.Err != nil {
		return nil, b.Err
	}
	b.mu.Lock()
	b.submits, b.peers = append(b.submits, s), append(b.peers, p)
	b.mu.Unlock()
	st := &stream{b: b, id: b.nextID.Add(1), ctx: ctx, prompt: b.Prompt, finish: b.Finish}
	switch {
	case len(s.Tools) > 0 && b.Calls != nil:
		st.calls = b.Calls
	case b.Text != nil:
		st.text = b.Text(s)
	default:
		n := s.MaxTokens
		if n == 0 {
			n = 3
		}
		for i := range n {
			st.text = append(st.text, fmt.Sprintf("tok%d ", i))
		}
	}
	if st.prompt == nil {
		st.prompt = []int{1, 2}
	}
	if st.finish == "" {
		st.finish = "length"
	}
	return st, nil
}

// Cancel counts the call; every stream then ends "cancelled".
func (b *Backend) Cancel(ipc.Peer, uint64, bool) error { b.Cancelled.Add(1); return nil }

// Stats has nothing to report.
func (b *Backend) Stats() *wire.StatsReport { return nil }

// Health is State's.
func (b *Backend) Health() wire.Health {
	if b.State != "" {
		return wire.Health{State: b.State}
	}
	return wire.Health{State: "ready"}
}

// Models is List.
func (m Models) Models() []wire.ModelEntry { return m.List }

// LoadModel loads nothing and succeeds.
func (Models) LoadModel(context.Context, ipc.Peer, string, string, bool) error { return nil }

// DeleteModel succeeds.
func (Models) DeleteModel(ipc.Peer, string) error { return nil }

// CopyModel succeeds.
func (Models) CopyModel(ipc.Peer, string, string) error { return nil }

// Embed is unavailable: the fake has no vectors.
func (Models) Embed(context.Context, ipc.Peer, *wire.Embed) (*wire.Embed, error) {
	return nil, wire.Errorf(wire.CodeUnavailable, "no embeddings here")
}

type stream struct {
	b      *Backend
	id     uint64
	ctx    context.Context
	prompt []int
	text   []string
	calls  []wire.ToolCall
	finish string
	i      int
}

func (s *stream) RequestID() uint64   { return s.id }
func (s *stream) PromptTokens() []int { return s.prompt }

func (s *stream) Next(context.Context) (ipc.Event, error) {
	if s.i == len(s.text) || s.ctx.Err() != nil || s.b.Cancelled.Load() > 0 {
		s.b.Ended.Add(1)
		d := &wire.Done{FinishReason: s.finish, Usage: wire.Usage{PromptTokens: len(s.prompt), CompletionTokens: s.i}}
		switch {
		case s.i < len(s.text):
			d.FinishReason = "cancelled"
		case s.calls != nil:
			d.FinishReason, d.ToolCalls, d.Usage.CompletionTokens = "tool_calls", s.calls, 1
		}
		return ipc.Event{Done: d}, nil
	}
	time.Sleep(s.b.Delay)
	s.i++
	return ipc.Event{Text: s.text[s.i-1], Tokens: []int{s.i}}, nil
}

// Users is the access layer's fake: a per-user cap (Limit, 0 none) and
// a policy.
type Users struct {
	Limit int
	Pol   ipc.Policy
	mu    sync.Mutex
	n     map[uint32]int
}

// AcquireUser takes one of p's slots, or refuses past Limit.
func (u *Users) AcquireUser(p ipc.Peer) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n == nil {
		u.n = map[uint32]int{}
	}
	if u.Limit > 0 && u.n[p.UID] >= u.Limit {
		return wire.Errorf(wire.CodeResourceExhausted, "uid %d: limit", p.UID)
	}
	u.n[p.UID]++
	return nil
}

// ReleaseUser gives one of p's slots back.
func (u *Users) ReleaseUser(p ipc.Peer) { u.mu.Lock(); u.n[p.UID]--; u.mu.Unlock() }

// Policy is a copy of Pol.
func (u *Users) Policy() *ipc.Policy { u.mu.Lock(); defer u.mu.Unlock(); p := u.Pol; return &p }

// SetPolicy replaces Pol.
func (u *Users) SetPolicy(p ipc.Policy) { u.mu.Lock(); u.Pol = p; u.mu.Unlock() }

// InFlight is the slots held, every user together.
func (u *Users) InFlight() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := 0
	for _, n := range u.n {
		t += n
	}
	return t
}
