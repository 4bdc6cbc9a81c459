package toolcall

import (
	"context"
	"strings"
	"testing"

	"github.com/batchd/batchd/grammar"

	"github.com/batchd/batchd/testing/testmodels"
)

type toolCase = testmodels.ToolCase

func toolCases(t *testing.T) []toolCase { return testmodels.ToolCases(t) }

var formatOfLabel = map[string]Format{"Hermes 2 Pro": Hermes, "Llama 3.x": Llama3, "Mistral Nemo": MistralNemo, "Generic": Generic}

// TestGrammarsMatchLlamaCpp builds each reference case's grammar and
// compares it with the one llama.cpp built, byte for byte. llama.cpp
// reads a named tool_choice as auto (the *-named cases record that), so
// those are compared as auto here.
func TestGrammarsMatchLlamaCpp(t *testing.T) {
	n := 0
	for _, c := range toolCases(t) {
		f, ok := formatOfLabel[c.ChatFormat]
		if !ok {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			tools, err := ParseTools(c.Request.Tools)
			if err != nil {
				t.Fatal(err)
			}
			choice, err := ParseChoice(c.Request.ToolChoice, tools)
			if err != nil {
				t.Fatal(err)
			}
			if choice.Mode == Named {
				choice = Choice{Mode: Auto}
			}
			p, err := Build(context.Background(), f, tools, choice, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// batchd's number has an exponent of at most two digits.
			if strings.ReplaceAll(p.GBNF, "number ::= "+grammar.NumberRule+" space", "number ::= "+grammar.LlamaCppNumberRule+" space") != c.Grammar {
				t.Errorf("grammar differs from llama.cpp's\n--- batchd\n%s\n--- llama.cpp\n%s", p.GBNF, c.Grammar)
			}
			if p.Lazy != c.GrammarLazy {
				t.Errorf("lazy %v, llama.cpp %v", p.Lazy, c.GrammarLazy)
			}
			want := c.TriggerWords
			if len(c.TriggerTokens) > 0 { // Hermes: the <tool_call> token, here by its text
				want = []string{hermesOpen}
			}
			if p.Lazy && !equal(p.Triggers, want) {
				t.Errorf("triggers %q, llama.cpp %q", p.Triggers, want)
			}
			if !equal(p.Stops, c.StopStrings) && !(len(p.Stops) == 0 && len(c.StopStrings) == 0) {
				t.Errorf("stops %q, llama.cpp %q", p.Stops, c.StopStrings)
			}
		})
		n++
	}
	if n < 14 {
		t.Errorf("%d cases compared; the references have 14 tool cases", n)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
