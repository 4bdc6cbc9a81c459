package serve

import (
	"context"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/tokenizer"
)

// Caps on a request's routing tags (they are matched per request).
const (
	maxTags     = 16
	maxTagBytes = 64
)

// Submit starts s for peer p: the model leased for the request's life
// (released when the terminal event is read), the request prepared
// (prepare) and handed to the model's engine.
func (svc *Service) Submit(ctx context.Context, p ipc.Peer, s *wire.Submit) (ipc.RequestStream, error) {
	if err := svc.waitReady(ctx); err != nil {
		return nil, err
	}
	keepAlive, err := svc.keepAliveFor(p, s.KeepAlive)
	if err != nil {
		return nil, err
	}
	lm, lease, err := svc.acquireModel(ctx, s.Model, keepAlive)
	if err != nil {
		return nil, err
	}
	req, out, err := svc.prepare(ctx, p, s, lm)
	if err == nil {
		out.st, err = lm.Engine.Submit(ctx, req)
		err = engineError(err)
	}
	if err != nil {
		lease.Release()
		return nil, err
	}
	out.lease = lease
	return out, nil
}

// engineError is err (nil stays nil) as a wire error.
func engineError(err error) error {
	if err == nil {
		return nil
	}
	return wireError(err)
}

// Render is the prompt ids s would run: the same checks, template, tool
// polyfills and tokenization as Submit, and no engine work.
func (svc *Service) Render(ctx context.Context, p ipc.Peer, s *wire.Submit) ([]int, error) {
	if err := svc.waitReady(ctx); err != nil {
		return nil, err
	}
	lm, lease, err := svc.acquireModel(ctx, s.Model, nil)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	req, _, err := svc.prepare(ctx, p, s, lm)
	if err != nil {
		return nil, err
	}
	return req.Tokens, nil
}

var _ ipc.Renderer = (*Service)(nil)

// prepare makes the engine request s asks for on model lm, and the stream
// that will read it. Each room is entered once, in this order: the
// submit's own bounds (no work), toolcall (the tools read and planned; a
// conflict with structured output refused here, before anything
// compiles), chat (the conversation rendered in a worker) and the
// tokenizer, grammar (the one grammar compiled: structured output or the
// tools'), then placement and sampling.
func (svc *Service) prepare(ctx context.Context, p ipc.Peer, s *wire.Submit, lm *LoadedModel) (engine.Request, *stream, error) {
	var none engine.Request
	if !lm.Model.Generates() { // before chat: its template would be the wrong complaint
		return none, nil, wire.Errorf(wire.CodeInvalidArgument, "model %s is an embedding model (%s): it does not generate; "+
			"ask it for embeddings", lm.Name, lm.Model.Config.Arch)
	}
	if err := checkSubmit(s); err != nil {
		return none, nil, err
	}
	spec := specOf(s)
	var ct *chatTools
	var err error
	if s.Messages != nil {
		if ct, err = toolsOf(ctx, lm, s, spec); err != nil {
			return none, nil, err
		}
	}
	toks, reasoningOpen, err := svc.promptTokens(ctx, lm, s, ct)
	if err != nil {
		return none, nil, err
	}
	if spec, err = ct.answerSpec(ctx, spec); err != nil {
		return none, nil, err
	}
	what := ""
	if ct.calls() && (spec.Empty() || ct.Plan.Answer) { // the calls' grammar, with the answer's schema in it
		spec, what = grammar.Spec{GBNF: ct.Plan.GBNF}, "tools: "
	}
	gr, err := svc.compile(ctx, spec, what)
	if err != nil {
		return none, nil, err
	}
	maxTokens, err := contextLimit(s.MaxTokens, effectiveLimit(s.ContextLimit, lm.ContextLimit), len(toks))
	if err != nil {
		return none, nil, err
	}
	seed, err := resolveSeed(s.Seed)
	if err != nil {
		return none, nil, err
	}
	channel, salt, err := svc.placement(p.UID, s.Channel, s.Tags, len(toks), s.CacheSalt)
	if err != nil {
		return none, nil, err
	}
	req := engine.Request{CacheSalt: salt, Tokens: toks, MaxTokens: maxTokens, Stop: s.Stop, StopTokenIDs: s.StopTokenIDs, IgnoreEOS: s.IgnoreEOS,
		Logprobs: s.Logprobs || s.TopLogprobs > 0, TopLogprobs: s.TopLogprobs, Grammar: gr,
		Priority: s.Priority, Channel: channel, Owner: p.UID, Sampling: sample.Params{Temperature: s.Temperature, TopK: s.TopK,
			TopP: s.TopP, MinP: s.MinP, RepetitionPenalty: s.RepetitionPenalty, Seed: seed,
			FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty}}
	out := &stream{prompt: toks, tok: lm.Model.Tokenizer, parser: ct.parser(reasoningOpen)}
	if ct != nil {
		if err := ct.apply(&req, lm.Model.Tokenizer, reasoningOpen); err != nil {
			return none, nil, err
		}
	}
	return req, out, nil
}

// checkSubmit checks what a submit asks for on its own: no model, no work.
func checkSubmit(s *wire.Submit) error {
	if s.Channel != "" && !config.IsChannel(s.Channel) {
		return wire.Errorf(wire.CodeInvalidArgument, "channel %q: want realtime, standard or bulk", s.Channel)
	}
	if n := btoi(s.Prompt != "") + btoi(s.Tokens != nil) + btoi(s.Messages != nil); n > 1 {
		return wire.Errorf(wire.CodeInvalidArgument, "give one of prompt, tokens and messages")
	}
	if s.Messages == nil && (len(s.Tools) > 0 || len(s.ToolChoice) > 0 || s.ReasoningFormat != "" || len(s.TemplateKwargs) > 0) {
		return wire.Errorf(wire.CodeInvalidArgument, "tools, tool_choice, reasoning_format and chat_template_kwargs need messages")
	}
	if s.Suffix != "" && (s.Messages != nil || s.Tokens != nil) {
		return wire.Errorf(wire.CodeInvalidArgument, "suffix goes with prompt (fill in the middle), not messages or tokens")
	}
	if err := checkTags(s.Tags); err != nil {
		return err
	}
	return checkStructured(s)
}

// promptTokens is the request's prompt as tokens: its own ids, its
// conversation rendered with its tools and tokenized (reporting whether
// the prompt left a reasoning block open), or its prompt tokenized (with
// a suffix: fill in the middle).
func (svc *Service) promptTokens(ctx context.Context, lm *LoadedModel, s *wire.Submit, ct *chatTools) ([]int, bool, error) {
	switch {
	case s.Messages != nil:
		r := Conversation{Messages: s.Messages, Tools: s.Tools, AddGenerationPrompt: s.AddGenerationPrompt == nil || *s.AddGenerationPrompt}
		if err := ct.conversation(&r, s.TemplateKwargs); err != nil {
			return nil, false, err
		}
		toks, text, err := chatPrompt(ctx, lm, r)
		if err != nil {
			return nil, false, err
		}
		return toks, ct.opensReasoning(text), nil
	case s.Tokens != nil:
		return s.Tokens, false, nil
	}
	// Reject what cannot fit before paying for tokenization.
	tok, ctxLen := lm.Model.Tokenizer, lm.Model.Config.Context
	if n := tok.MinTokens(s.Prompt) + tok.MinTokens(s.Suffix); n+1 > ctxLen {
		return nil, false, wire.Errorf(wire.CodeInvalidArgument, "prompt of %d bytes is at least %d tokens: more than the context of %d",
			len(s.Prompt)+len(s.Suffix), n+1, ctxLen)
	}
	if s.Suffix != "" {
		toks, err := infillPrompt(ctx, tok, s.Prompt, s.Suffix)
		return toks, false, err
	}
	o := tokenizer.Options{AddSpecial: true, ParseSpecial: s.ParseSpecial == nil || *s.ParseSpecial}
	toks, err := tok.Tokenize(ctx, s.Prompt, o)
	if err != nil {
		return nil, false, wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
	}
	return toks, false, nil
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

func (svc *Service) Cancel(p ipc.Peer, id uint64, admin bool) error {
	var lm *LoadedModel
	var owner uint32
	for _, r := range svc.Loaded() { // ids are unique across models
		if o, ok := r.Engine.Owner(id); ok {
			lm, owner = r, o
			break
		}
	}
	if lm == nil {
		return wire.Errorf(wire.CodeNotFound, "request %d is not running", id)
	}
	if owner != p.UID && !admin {
		return wire.Errorf(wire.CodePermissionDenied, "request %d belongs to another user", id)
	}
	if err := lm.Engine.Cancel(id); err != nil {
		return wireError(err)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
