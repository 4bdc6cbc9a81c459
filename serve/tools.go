package serve

import (
	"context"
	"encoding/json"

	"github.com/batchd/batchd/chat"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/tokenizer"
	"github.com/batchd/batchd/toolcall"
)

// toolSupport is how the served model writes tool calls and reasons.
type toolSupport struct {
	format    toolcall.Format
	reasoning *toolcall.Tags
}

// detectTools reads the template's tool-call format and reasoning tags;
// a configured format (model.tool_format) wins.
func detectTools(t *chat.Template, setting string) toolSupport {
	s := toolSupport{format: toolcall.Generic}
	if t != nil {
		s.format, s.reasoning = toolcall.Detect(t.Source()), toolcall.DetectReasoning(t.Source())
	}
	if f, _ := toolcall.ParseFormat(setting); f != "" {
		s.format = f
	}
	return s
}

// chatTools is one chat request's tools, tool_choice and reasoning.
type chatTools struct {
	support toolSupport
	toolcall.Prepared
	keep   bool // reasoning_format none
	closed bool // the prompt closed a reasoning block (thinking off)
}

// toolsOf reads a submit's tool fields in one trip to toolcall; spec is
// the structured output it also asks for: a JSON schema (or JSON mode)
// joins the calls' grammar as the answer a response without calls
// follows; a grammar, regex or choice, which a call would not follow, is
// refused before anything compiles.
func toolsOf(ctx context.Context, lm *LoadedModel, s *wire.Submit, spec grammar.Spec) (*chatTools, error) {
	ct := &chatTools{support: lm.Tools}
	switch s.ReasoningFormat {
	case "", "auto", "deepseek":
	case "none":
		ct.keep = true
	case "inline":
		ct.keep = ct.support.format != toolcall.Harmony
	default:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "reasoning_format %q: want auto, deepseek, none or inline", s.ReasoningFormat)
	}
	var err error
	r := toolcall.Request{Tools: s.Tools, Choice: s.ToolChoice, Parallel: s.ParallelToolCalls == nil || *s.ParallelToolCalls,
		Constrained: !spec.Empty(), Bare: ct.support.reasoning == nil}
	if spec.GBNF == "" && spec.Regex == "" && len(spec.Choice) == 0 {
		switch {
		case len(spec.Schema) > 0:
			r.Answer, r.AnswerStrict = spec.Schema, spec.Strict
		case spec.JSONObject:
			r.Answer = []byte(`{"type": "object"}`)
		}
	}
	ct.Prepared, err = toolcall.Prepare(ctx, ct.support.format, r)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "%v", err)
	}
	return ct, nil
}

// answerSpec is the structured output a request asks for, in the model's
// format: a harmony model's JSON goes on its final channel, after any
// analysis (llama.cpp constrains it there); a grammar, regex or choice
// holds the whole output, as for any model.
func (ct *chatTools) answerSpec(ctx context.Context, spec grammar.Spec) (grammar.Spec, error) {
	if ct == nil || ct.support.format != toolcall.Harmony || len(spec.Schema) == 0 && !spec.JSONObject {
		return spec, nil
	}
	schema := spec.Schema
	if spec.JSONObject {
		schema = []byte(`{"type": "object"}`)
	}
	gbnf, err := toolcall.HarmonyAnswer(ctx, schema, spec.Strict && !spec.JSONObject)
	switch {
	case err == nil:
		return grammar.Spec{GBNF: gbnf}, nil
	case ctx.Err() != nil:
		return spec, wire.Errorf(wire.CodeUnavailable, "the request ended while its grammar compiled: %v", ctx.Err())
	}
	return spec, wire.Errorf(wire.CodeInvalidArgument, "json_schema: %v", err)
}

// calls reports whether the answer's calls are read.
func (ct *chatTools) calls() bool { return ct != nil && ct.Calls() }

// conversation fills a chat request's tool fields: the tools, the
// format's instruction and template variables (the client's
// chat_template_kwargs win over the format's defaults).
func (ct *chatTools) conversation(r *Conversation, kwargs []byte) error {
	r.Polyfill, r.System, r.ToolsInSystem = len(ct.Tools) > 0, ct.System, ct.ToolsInSystem
	if len(kwargs) == 0 && len(ct.Vars) == 0 {
		return nil
	}
	vars := map[string]json.RawMessage{}
	if len(kwargs) > 0 {
		if err := json.Unmarshal(kwargs, &vars); err != nil || vars == nil {
			return wire.Errorf(wire.CodeInvalidArgument, "chat_template_kwargs: want a JSON object")
		}
	}
	for k, v := range ct.Vars {
		if _, ok := vars[k]; !ok {
			vars[k] = json.RawMessage(v)
		}
	}
	b, err := json.Marshal(vars)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "chat_template_kwargs: %v", err)
	}
	r.Vars = b
	return nil
}

// apply sets what the engine needs: the lazy grammar's triggers, the
// reasoning block it waits out, the markers to keep, the format's stops.
func (ct *chatTools) apply(req *engine.Request, tok *tokenizer.Tokenizer, open bool) error {
	p := ct.Plan
	if req.Grammar != nil {
		if p.Lazy && ct.calls() {
			req.GrammarTriggers = p.Triggers
		}
		if t := ct.support.reasoning; t != nil {
			req.Think = &engine.ThinkTags{Open: t.Open, Close: t.Close, Inside: open}
			if ct.calls() {
				req.Think.Ends = p.EndsThought
			}
		}
	}
	keep := p.Preserve
	if t := ct.support.reasoning; t != nil {
		keep = append(keep[:len(keep):len(keep)], t.Open, t.Close)
	}
	for _, text := range keep {
		if id := tok.SpecialID(text); id >= 0 && tok.IsControl(id) {
			req.Preserve = append(req.Preserve, id)
		}
	}
	if ct.calls() {
		for _, s := range p.Stops {
			if len(req.Stop) >= engine.MaxStopStrings {
				return wire.Errorf(wire.CodeInvalidArgument, "%d stop strings: at most %d with tools", len(req.Stop), engine.MaxStopStrings-len(p.Stops))
			}
			req.Stop = append(req.Stop, s)
		}
	}
	return nil
}

// parser reads the answer into content, reasoning and calls; nil when
// there is nothing to read apart.
func (ct *chatTools) parser(open bool) *toolcall.Parser {
	harmony := ct != nil && ct.support.format == toolcall.Harmony // its channels are always read apart
	if ct == nil || !harmony && !ct.calls() && (ct.support.reasoning == nil || ct.keep) {
		return nil
	}
	return toolcall.NewParser(toolcall.ParseOptions{Format: ct.support.format, Calls: ct.calls(), Tools: ct.Tools,
		Reasoning: ct.support.reasoning, ReasoningOpen: open, ReasoningClosed: ct.closed, KeepReasoning: ct.keep})
}

// opensReasoning reports whether the rendered prompt left a block open,
// and notes whether it closed one (thinking off).
func (ct *chatTools) opensReasoning(prompt string) bool {
	ct.closed = toolcall.ClosesReasoning(prompt, ct.support.reasoning)
	return toolcall.OpensReasoning(prompt, ct.support.reasoning)
}

// deltaEvent is a parser delta as an ipc event.
func deltaEvent(d toolcall.Delta) (text, reasoning string, calls []wire.ToolCallDelta) {
	for _, c := range d.Calls {
		calls = append(calls, wire.ToolCallDelta{Index: c.Index, ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return d.Content, d.Reasoning, calls
}

// wireCalls are a parser's calls for the done frame.
func wireCalls(cs []toolcall.Call) []wire.ToolCall {
	out := make([]wire.ToolCall, len(cs))
	for i, c := range cs {
		out[i] = wire.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return out
}
