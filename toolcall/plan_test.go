package toolcall

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/batchd/batchd/grammar"
)

// TestGenericCallIDIsBounded: the Generic format's parallel calls carry an
// id the grammar now bounds (llama.cpp's has no upper bound, so a model
// could write one until max_tokens and lose the call).
func TestGenericCallIDIsBounded(t *testing.T) {
	tools, err := ParseTools([]byte(`[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(context.Background(), Generic, tools, Choice{Mode: Required}, Options{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.Parse(p.GBNF)
	if err != nil {
		t.Fatal(err)
	}
	call := func(id string) bool {
		m := g.NewMatcher()
		return m.Accept([]byte(`{"tool_calls": [{"name": "f", "arguments": {}, "id": "`+id+`"}]}`)) == nil && m.AllowsEnd()
	}
	if !call("call_0123456789") {
		t.Fatal("a plain id was refused")
	}
	if call(strings.Repeat("x", maxCallIDBytes+1)) {
		t.Fatalf("an id of %d characters was taken", maxCallIDBytes+1)
	}
}

// TestRequiredNumbersAreFinite: a tool's number argument cannot overflow a
// double (an exponent of 418418 made a required amount come back null).
func TestRequiredNumbersAreFinite(t *testing.T) {
	tools, err := ParseTools([]byte(`[{"type": "function", "function": {"name": "convert", "parameters": {"type": "object",
		"properties": {"amount": {"type": "number"}}, "required": ["amount"]}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(context.Background(), Llama3, tools, Choice{Mode: Named, Name: "convert"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.Parse(p.GBNF)
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]bool{`1.5`: true, `418418418418418e99`: true, `418418418418418e418418`: false, `1e308`: false} {
		m := g.NewMatcher()
		got := m.Accept([]byte(`{"name": "convert", "parameters": {"amount": `+args+`}}`)) == nil && m.AllowsEnd()
		if got != want {
			t.Errorf("amount %s: taken %v, want %v", args, got, want)
		}
	}
}

// TestPrepare: one call reads the tools and the choice, refuses calls
// beside structured output before converting a schema (even one that
// would not convert), plans the calls and gives the prompt's options.
func TestPrepare(t *testing.T) {
	tools := []byte(`[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}]`)
	bad := []byte(`[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"$ref":"#/nope"}}}}}]`)
	ctx := context.Background()
	if _, err := Prepare(ctx, Hermes, Request{Tools: bad, Constrained: true}); !errors.Is(err, ErrConflict) {
		t.Errorf("calls beside structured output: %v, want ErrConflict", err)
	}
	if _, err := Prepare(ctx, Hermes, Request{Tools: tools, Choice: []byte(`"none"`), Constrained: true}); err != nil {
		t.Errorf("tool_choice none beside structured output: %v", err)
	}
	p, err := Prepare(ctx, Generic, Request{Tools: tools, Parallel: true})
	if err != nil || !p.Calls() || p.Plan.GBNF == "" || p.System != genericSystem || len(p.Tools) != 1 {
		t.Errorf("generic: %+v, %v", p, err)
	}
	if _, err := Prepare(ctx, Hermes, Request{Tools: tools, Choice: []byte(`{"type":"function","function":{"name":"g"}}`)}); err == nil {
		t.Error("a tool_choice naming no tool was taken")
	}
}

// TestCallsOrAnswer: tools beside a JSON schema (the Agents SDK's output
// type) give one grammar, from the first token: a call, or an answer that
// follows the schema, nothing else; tool_choice required leaves only the
// call; a harmony model's schema and a regex still conflict.
func TestCallsOrAnswer(t *testing.T) {
	tools := []byte(`[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}]`)
	answer := []byte(`{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"],"additionalProperties":false}`)
	ctx := context.Background()
	accepts := func(p Prepared, text string) bool {
		g, err := grammar.Parse(p.Plan.GBNF)
		if err != nil {
			t.Fatal(err)
		}
		m := g.NewMatcher()
		return m.Accept([]byte(text)) == nil && m.AllowsEnd()
	}
	call := hermesOpen + `{"name": "f", "arguments": {"x": 3}}` + hermesClose
	p, err := Prepare(ctx, Hermes, Request{Tools: tools, Constrained: true, Answer: answer, AnswerStrict: true})
	if err != nil || !p.Plan.Answer || p.Plan.Lazy || len(p.Plan.Triggers) != 0 {
		t.Fatalf("auto with an answer: %+v, %v", p.Plan, err)
	}
	for text, want := range map[string]bool{call: true, `{"sum": 5}`: true, `{"total": 5}`: false, "free text": false} {
		if got := accepts(p, text); got != want {
			t.Errorf("auto: %q taken %v, want %v", text, got, want)
		}
	}
	p, err = Prepare(ctx, Hermes, Request{Tools: tools, Choice: []byte(`"required"`), Constrained: true, Answer: answer})
	if err != nil || !accepts(p, call) || accepts(p, `{"sum": 5}`) {
		t.Errorf("required with an answer: a call only (%v)", err)
	}
	if _, err := Prepare(ctx, Harmony, Request{Tools: tools, Constrained: true, Answer: answer}); !errors.Is(err, ErrConflict) {
		t.Errorf("harmony with an answer: %v, want ErrConflict", err)
	}
	if _, err := Prepare(ctx, Hermes, Request{Tools: tools, Constrained: true}); !errors.Is(err, ErrConflict) {
		t.Errorf("a grammar beside calls: %v, want ErrConflict", err)
	}
}
