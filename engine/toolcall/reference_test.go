package toolcall

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// toolCase is one of llama.cpp's tool-calling responses in models/grammar.
type toolCase struct {
	ID           string `json:"id"`
	Model        string `json:"model"`
	ChatTemplate string `json:"chat_template"`
	Request      struct {
		Messages   json.RawMessage `json:"messages"`
		Tools      json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	} `json:"request"`
	RenderedPrompt string   `json:"rendered_prompt"`
	PromptTokens   []int    `json:"prompt_tokens"`
	ChatFormat     string   `json:"chat_format"`
	GrammarLazy    bool     `json:"grammar_lazy"`
	Grammar        string   `json:"grammar"`
	TriggerWords   []string `json:"grammar_trigger_words"`
	TriggerTokens  []int    `json:"grammar_trigger_tokens"`
	StopStrings    []string `json:"stop_strings"`
	RawText        string   `json:"raw_text"`
	OutputTokens   []int    `json:"output_tokens"`
	Stop           string   `json:"stop"`
	Response       struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	} `json:"response"`
}

func toolCases(t *testing.T) []toolCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "grammar", "tools-cases.json"))
	if err != nil {
		t.Skip(err)
	}
	var cs []toolCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

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
			p, err := Build(f, tools, choice, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p.GBNF != c.Grammar {
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
