package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/testmodels"
	"github.com/batchd/batchd/tokenizer"
)

// gateModel loads tiny-qwen2 and returns its free greedy text after a
// prompt, token by token.
func gateModel(t *testing.T) (*Engine, []int, []string) {
	t.Helper()
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", "tiny-qwen2.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e := startEngine(t, m, engineOpts{kvType: quant.F32})
	prompt := m.Tokenizer.Encode("Once upon a time, in a land far away,", true)
	st, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: 24, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	_, toks, _, err := st.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for _, id := range toks {
		pieces = append(pieces, string(m.Tokenizer.TokenBytes(-1, id)))
	}
	return e, prompt, pieces
}

// fresh is the first index from min whose token text is not in the text
// before it, or -1.
func fresh(pieces []string, from int) int {
	for k := from; k < len(pieces); k++ {
		if strings.TrimSpace(pieces[k]) != "" && !strings.Contains(strings.Join(pieces[:k], ""), pieces[k]) {
			return k
		}
	}
	return -1
}

func runGate(t *testing.T, e *Engine, r Request) (string, Event) {
	t.Helper()
	st, err := e.Submit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	text, _, done, err := st.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return text, done
}

// TestLazyGrammarStartsAtTrigger: with a lazy grammar the output is the
// model's own until the trigger text, and from the trigger's first byte
// it is the grammar's.
func TestLazyGrammarStartsAtTrigger(t *testing.T) {
	e, prompt, free := gateModel(t)
	// Trigger on the first token whose text the output has not had yet.
	k := fresh(free, 1)
	if k < 0 {
		t.Skipf("free output %q has no usable trigger", free)
	}
	before, trigger := strings.Join(free[:k], ""), free[k]
	g, err := grammar.Parse("root ::= " + grammar.Literal(trigger) + ` "!!" "\n"`)
	if err != nil {
		t.Fatal(err)
	}
	text, done := runGate(t, e, Request{Tokens: prompt, MaxTokens: 24, Grammar: g, GrammarTriggers: []string{trigger}})
	if want := before + trigger + "!!\n"; text != want || done.Finish != FinishStop {
		t.Errorf("lazy: %q (%s), want %q then the grammar's end", text, done.Finish, want)
	}
	// A trigger the model never writes leaves the output free.
	text, done = runGate(t, e, Request{Tokens: prompt, MaxTokens: 24, IgnoreEOS: true, Grammar: g, GrammarTriggers: []string{"\x01never"}})
	if want := strings.Join(free, ""); text != want {
		t.Errorf("untriggered: %q, want the free %q", text, want)
	}
}

// TestGrammarWaitsOutReasoning: a reasoning block the first token opens
// is free; the grammar holds after its close tag; a prompt may open it.
func TestGrammarWaitsOutReasoning(t *testing.T) {
	e, prompt, free := gateModel(t)
	k := fresh(free, 2)
	if k < 0 || strings.TrimSpace(free[0]) == "" {
		t.Skipf("free output %q has no usable tags", free)
	}
	open, middle, close := free[0], strings.Join(free[1:k], ""), free[k]
	g, err := grammar.Parse(`root ::= "42"`)
	if err != nil {
		t.Fatal(err)
	}
	text, done := runGate(t, e, Request{Tokens: prompt, MaxTokens: 24, Grammar: g, Think: &ThinkTags{Open: open, Close: close}})
	if want := open + middle + close + "42"; text != want || done.Finish != FinishStop {
		t.Errorf("thought then grammar: %q (%s), want %q", text, done.Finish, want)
	}
	// A first token that opens no block is the grammar's.
	text, _ = runGate(t, e, Request{Tokens: prompt, MaxTokens: 24, Grammar: g, Think: &ThinkTags{Open: "\x01<x>", Close: "</x>"}})
	if text != "42" {
		t.Errorf("no thought: %q, want the grammar's 42", text)
	}
	// Inside: the prompt opened the block; it ends at the close tag.
	text, _ = runGate(t, e, Request{Tokens: prompt, MaxTokens: 24, Grammar: g, Think: &ThinkTags{Open: "<x>", Close: close, Inside: true}})
	if want := open + middle + close + "42"; text != want {
		t.Errorf("opened by the prompt: %q, want %q", text, want)
	}
	// An end text (Qwen3.5's <tool_call>) ends the block before its
	// close tag, and is the grammar's first text; lazy or not.
	ge, err := grammar.Parse("root ::= " + grammar.Literal(close) + ` "!!"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, lazy := range [][]string{nil, {close}} {
		text, done = runGate(t, e, Request{Tokens: prompt, MaxTokens: 24, Grammar: ge, GrammarTriggers: lazy,
			Think: &ThinkTags{Open: "<x>", Close: "\x01never", Ends: []string{close}, Inside: true}})
		if want := open + middle + close + "!!"; text != want || done.Finish != FinishStop {
			t.Errorf("ended by %q (triggers %q): %q (%s), want %q", close, lazy, text, done.Finish, want)
		}
	}
	if _, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: 4, Grammar: g,
		Think: &ThinkTags{Open: "<x>", Close: "</x>", Ends: []string{""}}}); err == nil {
		t.Error("an empty end text was taken")
	}
}

// TestPreservedControlTokens: a grammar takes a control token only where
// the request preserves it, and then the token writes its text; either
// way the text is the grammar's.
func TestPreservedControlTokens(t *testing.T) {
	e, prompt, _ := gateModel(t)
	tok := e.m.Tokenizer
	id := tok.SpecialID("<|im_start|>")
	if id < 0 || !tok.IsControl(id) {
		t.Skip("no <|im_start|> control token")
	}
	g, err := grammar.Parse(`root ::= "<|im_start|>" "ok"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range [][]int{nil, {id}} {
		st, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: 16, Grammar: g, Preserve: keep})
		if err != nil {
			t.Fatal(err)
		}
		text, toks, _, err := st.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if text != "<|im_start|>ok" {
			t.Errorf("preserve %v: text %q", keep, text)
		}
		if keep == nil && slices.Contains(toks, id) {
			t.Errorf("a control token not preserved was sampled: %v", toks)
		}
	}
	d := tokenizer.NewDetokenizer(tok, prompt[len(prompt)-1])
	d.Keep([]int{id})
	if got := d.Add(id); got != "<|im_start|>" {
		t.Errorf("a kept control token writes %q", got)
	}
}
