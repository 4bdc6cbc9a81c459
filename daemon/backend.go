package daemon

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/serve/models"
	"github.com/batchd/batchd/tokenizer"
	"github.com/batchd/batchd/toolcall"
)

// ipcBackend adapts the engine to the ipc server: it maps messages to engine
// requests and engine errors to wire codes.
type ipcBackend struct{ d *Daemon }

var _ ipc.Backend = ipcBackend{}

var channels = map[string]bool{"": true, "realtime": true, "standard": true, "bulk": true}

// Caps on a request's routing tags (they are matched per request).
const (
	maxTags     = 16
	maxTagBytes = 64
)

func (b ipcBackend) Submit(ctx context.Context, p ipc.Peer, s *wire.Submit) (ipc.RequestStream, error) {
	if _, err := b.d.waitReady(ctx); err != nil {
		return nil, err
	}
	keepAlive, err := b.d.keepAliveFor(p, s.KeepAlive)
	if err != nil {
		return nil, err
	}
	rt, lease, err := b.d.acquireModel(ctx, s.Model, keepAlive)
	if err != nil {
		return nil, err
	}
	if !rt.Model.Generates() { // before chat: its template would be the wrong complaint
		lease.Release()
		return nil, wire.Errorf(wire.CodeInvalidArgument, "model %s is an embedding model (%s): it does not generate; "+
			"ask it for embeddings", rt.Name, rt.Model.Config.Arch)
	}
	st, err := b.submit(ctx, p, s, rt)
	if err != nil {
		lease.Release()
		return nil, err
	}
	st.lease = lease
	return st, nil
}

// checkTags bounds a request's routing tags.
func checkTags(tags []string) error {
	if len(tags) > maxTags {
		return wire.Errorf(wire.CodeInvalidArgument, "%d tags: at most %d", len(tags), maxTags)
	}
	for _, t := range tags {
		if len(t) > maxTagBytes {
			return wire.Errorf(wire.CodeInvalidArgument, "tag of %d bytes: at most %d", len(t), maxTagBytes)
		}
	}
	return nil
}

// submit starts s on model rt.
func (b ipcBackend) submit(ctx context.Context, p ipc.Peer, s *wire.Submit, rt *Runtime) (*stream, error) {
	req, out, err := b.prepare(ctx, p, s, rt)
	if err != nil {
		return nil, err
	}
	if out.st, err = rt.Engine.Submit(ctx, req); err != nil {
		return nil, wireError(err)
	}
	return out, nil
}

// prepare checks s and makes the engine request it asks for on model rt
// (its prompt tokens rendered and tokenized), and the stream that will
// read it; Render stops here.
func (b ipcBackend) prepare(ctx context.Context, p ipc.Peer, s *wire.Submit, rt *Runtime) (engine.Request, *stream, error) {
	var none engine.Request
	if !channels[s.Channel] {
		return none, nil, wire.Errorf(wire.CodeInvalidArgument, "channel %q: want realtime, standard or bulk", s.Channel)
	}
	if n := btoi(s.Prompt != "") + btoi(s.Tokens != nil) + btoi(s.Messages != nil); n > 1 {
		return none, nil, wire.Errorf(wire.CodeInvalidArgument, "give one of prompt, tokens and messages")
	}
	if err := checkTags(s.Tags); err != nil {
		return none, nil, err
	}
	gr, err := b.d.structured(ctx, s)
	if err != nil {
		return none, nil, err
	}
	toks := s.Tokens
	var ct *chatTools
	reasoningOpen := false
	if s.Messages != nil {
		if toks, ct, reasoningOpen, gr, err = b.chatPrompt(ctx, rt, s, gr); err != nil {
			return none, nil, err
		}
	} else if len(s.Tools) > 0 || len(s.ToolChoice) > 0 || s.ReasoningFormat != "" || len(s.TemplateKwargs) > 0 {
		return none, nil, wire.Errorf(wire.CodeInvalidArgument, "tools, tool_choice, reasoning_format and chat_template_kwargs need messages")
	}
	if s.Suffix != "" && (s.Messages != nil || s.Tokens != nil) {
		return none, nil, wire.Errorf(wire.CodeInvalidArgument, "suffix goes with prompt (fill in the middle), not messages or tokens")
	}
	if s.Messages == nil && toks == nil {
		// Reject what cannot fit before paying for tokenization.
		tok, ctxLen := rt.Model.Tokenizer, rt.Model.Config.Context
		if n := tok.MinTokens(s.Prompt) + tok.MinTokens(s.Suffix); n+1 > ctxLen {
			return none, nil, wire.Errorf(wire.CodeInvalidArgument, "prompt of %d bytes is at least %d tokens: more than the context of %d",
				len(s.Prompt)+len(s.Suffix), n+1, ctxLen)
		}
		if s.Suffix != "" {
			toks, err = infillPrompt(ctx, tok, s.Prompt, s.Suffix)
		} else {
			o := tokenizer.Options{AddSpecial: true, ParseSpecial: s.ParseSpecial == nil || *s.ParseSpecial}
			if toks, err = tok.Tokenize(ctx, s.Prompt, o); err != nil {
				err = wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
			}
		}
		if err != nil {
			return none, nil, err
		}
	}
	maxTokens, err := contextLimit(s.MaxTokens, effectiveLimit(s.ContextLimit, rt.ContextLimit), len(toks))
	if err != nil {
		return none, nil, err
	}
	seed, err := resolveSeed(s.Seed)
	if err != nil {
		return none, nil, err
	}
	channel, salt, err := b.d.placement(p.UID, s.Channel, s.Tags, len(toks), s.CacheSalt)
	if err != nil {
		return none, nil, err
	}
	req := engine.Request{CacheSalt: salt, Tokens: toks, MaxTokens: maxTokens, Stop: s.Stop, StopTokenIDs: s.StopTokenIDs, IgnoreEOS: s.IgnoreEOS,
		Logprobs: s.Logprobs || s.TopLogprobs > 0, TopLogprobs: s.TopLogprobs, Grammar: gr,
		Priority: s.Priority, Channel: channel, Owner: p.UID, Sampling: sample.Params{Temperature: s.Temperature, TopK: s.TopK,
			TopP: s.TopP, MinP: s.MinP, RepetitionPenalty: s.RepetitionPenalty, Seed: seed,
			FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty}}
	out := &stream{prompt: toks, tok: rt.Model.Tokenizer}
	if ct != nil {
		if err := ct.apply(&req, rt.Model.Tokenizer, reasoningOpen); err != nil {
			return none, nil, err
		}
		out.parser = ct.parser(reasoningOpen)
	}
	return req, out, nil
}

// chatPrompt renders a chat submit with its tools: the prompt tokens, the
// request's tools, whether the prompt opened a reasoning block, and the
// grammar (the structured-output one gr, or the tools').
func (b ipcBackend) chatPrompt(ctx context.Context, rt *Runtime, s *wire.Submit, gr *grammar.Grammar) (
	[]int, *chatTools, bool, *grammar.Grammar, error) {
	ct, err := toolsOf(ctx, rt, s, gr != nil)
	if err != nil {
		return nil, nil, false, nil, err
	}
	r := chatRequest{Messages: s.Messages, Tools: s.Tools, AddGenerationPrompt: s.AddGenerationPrompt == nil || *s.AddGenerationPrompt}
	if err := ct.render(&r, s.TemplateKwargs); err != nil {
		return nil, nil, false, nil, err
	}
	toks, text, err := chatPrompt(ctx, rt, r)
	if err != nil {
		return nil, nil, false, nil, err
	}
	if gr == nil && ct.calls() {
		if gr, err = ct.grammar(ctx, b.d); err != nil {
			return nil, nil, false, nil, err
		}
	}
	return toks, ct, ct.opensReasoning(text), gr, nil
}

func (b ipcBackend) Cancel(p ipc.Peer, id uint64, admin bool) error {
	var rt *Runtime
	var owner uint32
	for _, r := range b.d.loadedRuntimes() { // ids are unique across models
		if o, ok := r.Engine.Owner(id); ok {
			rt, owner = r, o
			break
		}
	}
	if rt == nil {
		return wire.Errorf(wire.CodeNotFound, "request %d is not running", id)
	}
	if owner != p.UID && !admin {
		return wire.Errorf(wire.CodePermissionDenied, "request %d belongs to another user", id)
	}
	if err := rt.Engine.Cancel(id); err != nil {
		return wireError(err)
	}
	return nil
}

func (b ipcBackend) Stats() *wire.StatsReport { return b.d.statsReport() }

var _ ipc.Reloader = ipcBackend{}

// Reload is batchctl reload: an explicit reload, as SIGHUP.
func (b ipcBackend) Reload(p ipc.Peer) (*wire.Reload, error) {
	res := b.d.reload(fmt.Sprintf("batchctl reload (uid %d)", p.UID), nil, true)
	if res.Err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "config rejected, the running one stays: %v", res.Err)
	}
	return &wire.Reload{Applied: res.Applied, RestartNeeded: res.RestartNeeded}, nil
}

func (b ipcBackend) Health() wire.Health {
	h := wire.Health{State: b.d.State().String(), Version: Version}
	if rt := b.d.runtime(); rt != nil {
		h.Model = modelInfo(rt)
	}
	return h
}

// modelInfo describes a loaded model for health and the models list.
func modelInfo(rt *Runtime) *wire.ModelInfo {
	c := rt.Model.Config
	mi := &wire.ModelInfo{Path: rt.Model.Path, Format: rt.Model.Format, Arch: c.Arch, Dim: c.Dim,
		Layers: c.Layers, Vocab: c.Vocab, Context: c.Context, EmbedOnly: !rt.Model.Generates()}
	if p, err := poolingOf(rt); err == nil && c.Pooling != 0 {
		mi.Pooling = p.String()
	}
	if rt.Chat != nil {
		mi.Chat, mi.ToolFormat, mi.Thinking = rt.Chat.Name(), string(rt.Tools.format), rt.Tools.reasoning != nil
	} else if rt.ChatErr != nil {
		mi.ChatError = rt.ChatErr.Error()
	}
	return mi
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stream adapts an engine stream to the ipc one.
type stream struct {
	st     *engine.Stream
	prompt []int
	tok    *tokenizer.Tokenizer
	// parser splits a chat answer into content, reasoning and calls (nil:
	// the text is the content); done is the terminal event, held while the
	// parser's last delta goes out first.
	parser *toolcall.Parser
	done   *ipc.Event
	// lease holds the model until the terminal event is read.
	lease *models.Lease
}

func (s *stream) release() {
	if s.lease != nil {
		s.lease.Release()
	}
}

func (s *stream) RequestID() uint64   { return s.st.ID() }
func (s *stream) PromptTokens() []int { return s.prompt }

func (s *stream) Next(ctx context.Context) (ipc.Event, error) {
	if s.done != nil {
		ev := *s.done
		s.done = nil
		return ev, nil
	}
	ev, ok, err := s.st.Recv(ctx)
	if err != nil {
		s.release()
		return ipc.Event{}, err
	}
	if !ok {
		s.release()
		return ipc.Event{}, errors.New("stream ended without a terminal event")
	}
	if ev.Done {
		s.release()
	}
	if !ev.Done {
		out := ipc.Event{Text: ev.Text, Tokens: ev.Tokens, Logprobs: s.logprobs(ev.Logprobs)}
		if s.parser != nil {
			out.Text, out.Reasoning, out.ToolCalls = deltaEvent(s.parser.Push(ev.Text))
		}
		return out, nil
	}
	d := &wire.Done{FinishReason: string(ev.Finish), Preemptions: ev.Preemptions,
		Usage: wire.Usage{PromptTokens: ev.Usage.PromptTokens, CompletionTokens: ev.Usage.CompletionTokens,
			CachedPromptTokens: ev.Usage.CachedPromptTokens},
		Timings: wire.Timings{QueueS: ev.Timings.Queue.Seconds(), FirstTokenS: ev.Timings.FirstToken.Seconds(),
			TotalS: ev.Timings.Total.Seconds()}}
	if ev.Err != nil {
		e := wireError(ev.Err)
		d.Code, d.Message = e.Code, e.Message
	}
	if s.parser == nil {
		return ipc.Event{Text: ev.Text, Tokens: ev.Tokens, Done: d}, nil
	}
	last := s.parser.Push(ev.Text)
	fin := s.parser.Finish()
	last.Content += fin.Content
	last.Reasoning += fin.Reasoning
	last.Calls = append(last.Calls, fin.Calls...)
	if calls := s.parser.Calls(); len(calls) > 0 {
		d.ToolCalls = wireCalls(calls)
		if d.FinishReason == string(engine.FinishStop) {
			d.FinishReason = "tool_calls"
		}
	}
	done := ipc.Event{Tokens: ev.Tokens, Done: d}
	if last.Empty() {
		return done, nil
	}
	s.done = &done
	out := ipc.Event{}
	out.Text, out.Reasoning, out.ToolCalls = deltaEvent(last)
	return out, nil
}

// logprobs gives each token its text and bytes for the wire.
func (s *stream) logprobs(lps []sample.Logprob) []wire.Logprob {
	if lps == nil {
		return nil
	}
	out := make([]wire.Logprob, len(lps))
	for i, lp := range lps {
		t := s.tokenLogprob(lp.Alt)
		out[i] = wire.Logprob{Token: t.Token, Logprob: t.Logprob, Text: t.Text, Bytes: t.Bytes}
		if lp.Top != nil {
			out[i].Top = make([]wire.TokenLogprob, len(lp.Top))
			for j, a := range lp.Top {
				out[i].Top[j] = s.tokenLogprob(a)
			}
		}
	}
	return out
}

func (s *stream) tokenLogprob(a sample.Alt) wire.TokenLogprob {
	b := []byte(s.tok.PieceText(a.Token)) // special tokens as written, as llama.cpp shows them
	return wire.TokenLogprob{Token: a.Token, Logprob: a.Logprob, Text: strings.ToValidUTF8(string(b), "\uFFFD"), Bytes: b}
}

// wireError maps an engine error category to its wire code. err must not be nil.
func wireError(err error) *wire.Error {
	var e *wire.Error
	if errors.As(err, &e) {
		return e
	}
	code, category := wire.CodeInternal, engine.ErrInternal
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		code, category = wire.CodeQueueFull, engine.ErrResourceExhausted
	case errors.Is(err, engine.ErrInvalidArgument):
		code, category = wire.CodeInvalidArgument, engine.ErrInvalidArgument
	case errors.Is(err, engine.ErrNotFound):
		code, category = wire.CodeNotFound, engine.ErrNotFound
	case errors.Is(err, engine.ErrResourceExhausted):
		code, category = wire.CodeResourceExhausted, engine.ErrResourceExhausted
	case errors.Is(err, engine.ErrUnavailable), errors.Is(err, context.Canceled):
		code, category = wire.CodeUnavailable, engine.ErrUnavailable
	}
	// The wire code already names the category: drop the engine's own
	// leading "invalid argument: " so the client does not read it twice.
	msg := strings.TrimPrefix(err.Error(), category.Error()+": ")
	return &wire.Error{Code: code, Message: msg}
}

// infillPrompt is llama.cpp's fill-in-the-middle prompt (prefix, suffix,
// middle: PSM): [BOS] FIM_PRE prefix FIM_SUF suffix FIM_MID, the texts
// tokenized with special-token text as text.
func infillPrompt(ctx context.Context, tok *tokenizer.Tokenizer, prefix, suffix string) ([]int, error) {
	pre, suf, mid, ok := tok.FIM()
	if !ok {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "suffix: this model's vocabulary has no fill-in-the-middle tokens")
	}
	var out []int
	if tok.AddBOS && tok.BOS >= 0 {
		out = append(out, tok.BOS)
	}
	for i, text := range []string{prefix, suffix} {
		ids, err := tok.Tokenize(ctx, text, tokenizer.Options{})
		if err != nil {
			return nil, wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
		}
		out = append(append(out, []int{pre, suf}[i]), ids...)
	}
	return append(out, mid), nil
}

// effectiveLimit is a request's context cap: its own (-1 refused later)
// within the model's.
func effectiveLimit(request, model int) int {
	if request < 0 || model == 0 || request > 0 && request < model {
		return request
	}
	return model
}

// contextLimit applies a context cap (a request's num_ctx, a model's
// context): the prompt must fit in it, and generation stops at it.
func contextLimit(maxTokens, limit, promptLen int) (int, error) {
	switch {
	case limit < 0:
		return 0, wire.Errorf(wire.CodeInvalidArgument, "context_limit %d: want 0 (the model's) or more", limit)
	case limit == 0:
		return maxTokens, nil
	case promptLen >= limit:
		return 0, wire.Errorf(wire.CodeInvalidArgument, "a prompt of %d tokens leaves no room in the context limit (num_ctx, the model's context setting) of %d",
			promptLen, limit)
	}
	room := limit - promptLen
	if maxTokens == 0 || maxTokens > room {
		return room, nil
	}
	return maxTokens, nil
}

// resolveSeed gives a submit's seed the one meaning both APIs share:
// wire.SeedRandom draws one, 0 and up are used as given.
func resolveSeed(seed int64) (uint64, error) {
	switch {
	case seed == wire.SeedRandom:
		return rand.Uint64(), nil
	case seed < 0:
		return 0, wire.Errorf(wire.CodeInvalidArgument, "seed %d: want -1 (random) or 0 and up", seed)
	}
	return uint64(seed), nil
}

var _ ipc.Renderer = ipcBackend{}

// Render is the prompt ids s would run: the same checks, template, tool
// polyfills and tokenization as Submit, and no engine work.
func (b ipcBackend) Render(ctx context.Context, p ipc.Peer, s *wire.Submit) ([]int, error) {
	if _, err := b.d.waitReady(ctx); err != nil {
		return nil, err
	}
	rt, lease, err := b.d.acquireModel(ctx, s.Model, nil)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	if !rt.Model.Generates() {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "model %s is an embedding model (%s): it does not generate", rt.Name, rt.Model.Config.Arch)
	}
	req, _, err := b.prepare(ctx, p, s, rt)
	if err != nil {
		return nil, err
	}
	return req.Tokens, nil
}
