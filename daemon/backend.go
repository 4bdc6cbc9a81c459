package daemon

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/ipc"
)

// backend adapts the engine to the ipc server: it maps messages to engine
// requests and engine errors to wire codes.
type backend struct{ d *Daemon }

var _ ipc.Backend = backend{}

var channels = map[string]bool{"": true, "realtime": true, "standard": true, "bulk": true}

func (b backend) Submit(ctx context.Context, p ipc.Peer, s *ipc.Submit) (ipc.RequestStream, error) {
	rt, err := b.d.waitReady(ctx)
	if err != nil {
		return nil, err
	}
	if !channels[s.Channel] {
		return nil, ipc.Errorf(ipc.CodeInvalidArgument, "channel %q: want realtime, standard or bulk", s.Channel)
	}
	if s.Prompt != "" && s.Tokens != nil {
		return nil, ipc.Errorf(ipc.CodeInvalidArgument, "give prompt or tokens, not both")
	}
	toks := s.Tokens
	if toks == nil {
		toks = rt.Model.Tokenizer.Encode(s.Prompt, true)
	}
	channel := s.Channel
	if channel == "" {
		channel = b.d.route(p.UID, s.Tags, len(toks))
	}
	req := engine.Request{Tokens: toks, MaxTokens: s.MaxTokens, Stop: s.Stop, StopTokenIDs: s.StopTokenIDs,
		Priority: s.Priority, Channel: channel, Owner: p.UID, Sampling: model.SamplingParams{Temperature: s.Temperature, TopK: s.TopK,
			TopP: s.TopP, MinP: s.MinP, RepetitionPenalty: s.RepetitionPenalty, Seed: s.Seed}}
	st, err := rt.Engine.Submit(ctx, req)
	if err != nil {
		return nil, wireError(err)
	}
	return &stream{st: st, prompt: toks}, nil
}

func (b backend) Cancel(p ipc.Peer, id uint64, admin bool) error {
	rt := b.d.runtime()
	if rt == nil {
		return ipc.Errorf(ipc.CodeNotFound, "request %d", id)
	}
	owner, ok := rt.Engine.Owner(id)
	if !ok {
		return ipc.Errorf(ipc.CodeNotFound, "request %d is not running", id)
	}
	if owner != p.UID && !admin {
		return ipc.Errorf(ipc.CodePermissionDenied, "request %d belongs to another user", id)
	}
	if err := rt.Engine.Cancel(id); err != nil {
		return wireError(err)
	}
	return nil
}

func (b backend) Stats() map[string]any {
	out := map[string]any{}
	if rt := b.d.runtime(); rt != nil {
		// The engine's JSON names are the stats names on the wire too.
		raw, _ := json.Marshal(rt.Engine.Stats())
		_ = json.Unmarshal(raw, &out)
	}
	for k, v := range b.d.daemonStats() {
		out[k] = v
	}
	return out
}

func (b backend) Health() ipc.Health {
	h := ipc.Health{State: b.d.State().String(), Version: Version}
	if rt := b.d.runtime(); rt != nil {
		c := rt.Model.Config
		h.Model = map[string]any{"path": rt.Model.Path, "format": rt.Model.Format, "arch": c.Arch, "dim": c.Dim,
			"layers": c.Layers, "vocab": c.Vocab, "context": c.Context}
	}
	return h
}

// stream adapts an engine stream to the ipc one.
type stream struct {
	st     *engine.Stream
	prompt []int
}

func (s *stream) RequestID() uint64   { return s.st.ID() }
func (s *stream) PromptTokens() []int { return s.prompt }

func (s *stream) Next(ctx context.Context) (ipc.Event, error) {
	ev, ok, err := s.st.Recv(ctx)
	if err != nil {
		return ipc.Event{}, err
	}
	if !ok {
		return ipc.Event{}, errors.New("stream ended without a terminal event")
	}
	if !ev.Done {
		return ipc.Event{Text: ev.Text, Tokens: ev.Tokens}, nil
	}
	d := &ipc.Done{FinishReason: string(ev.Finish), Preemptions: ev.Preemptions,
		Usage: ipc.Usage{PromptTokens: ev.Usage.PromptTokens, CompletionTokens: ev.Usage.CompletionTokens,
			CachedPromptTokens: ev.Usage.CachedPromptTokens},
		Timings: ipc.Timings{QueueS: ev.Timings.Queue.Seconds(), FirstTokenS: ev.Timings.FirstToken.Seconds(),
			TotalS: ev.Timings.Total.Seconds()}}
	if ev.Err != nil {
		e := wireError(ev.Err)
		d.Code, d.Message = e.Code, e.Message
	}
	return ipc.Event{Text: ev.Text, Tokens: ev.Tokens, Done: d}, nil
}

// wireError maps an engine error category to its wire code. err must not be nil.
func wireError(err error) *ipc.Error {
	var e *ipc.Error
	if errors.As(err, &e) {
		return e
	}
	code := ipc.CodeInternal
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		code = ipc.CodeQueueFull
	case errors.Is(err, engine.ErrInvalidArgument):
		code = ipc.CodeInvalidArgument
	case errors.Is(err, engine.ErrNotFound):
		code = ipc.CodeNotFound
	case errors.Is(err, engine.ErrResourceExhausted):
		code = ipc.CodeResourceExhausted
	case errors.Is(err, engine.ErrUnavailable), errors.Is(err, context.Canceled):
		code = ipc.CodeUnavailable
	}
	return &ipc.Error{Code: code, Message: err.Error()}
}
