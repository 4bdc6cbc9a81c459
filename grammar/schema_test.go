package grammar

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// grammarCase is one of llama.cpp's references in models/grammar.
type grammarCase struct {
	ID           string          `json:"id"`
	Model        string          `json:"model"`
	Prompt       string          `json:"prompt"`
	PromptTokens []int           `json:"prompt_tokens"`
	Schema       json.RawMessage `json:"json_schema"`
	GBNF         string          `json:"grammar"`
	FromLlamaCpp string          `json:"grammar_from_llama_cpp"`
	OutputTokens []int           `json:"output_tokens"`
	EOG          *int            `json:"eog_token"`
	Text         string          `json:"text"`
	Stop         string          `json:"stop"`
	NearTies     []int           `json:"near_ties"`
}

func grammarCases(t *testing.T) []grammarCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "grammar", "grammar-cases.json"))
	if err != nil {
		t.Skip(err)
	}
	var cs []grammarCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// differsOnPurpose are the references whose grammar batchd makes stricter
// than llama.cpp's: real dates only.
var differsOnPurpose = map[string]string{"s11-format-date": "date admits only real dates",
	"s08-number-min-max-not-enforced": "number bounds are enforced"}

// TestSchemaGrammarsMatchLlamaCpp: every reference schema becomes, in the
// legacy dialect, the GBNF the older llama.cpp build wrote for it, byte for
// byte (the same rules, names and whitespace), but where batchd enforces
// more. The tool-call grammars write that dialect; the current one is
// checked against llama.cpp v0.5.0 live (engine's
// TestSchemaConversionMatchesLlamaCppLive).
func TestSchemaGrammarsMatchLlamaCpp(t *testing.T) {
	for _, c := range grammarCases(t) {
		if c.Schema == nil {
			continue
		}
		got, err := SchemaGBNF(context.Background(), c.Schema, SchemaOptions{Strict: true, legacy: true})
		if err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		if why, ok := differsOnPurpose[c.ID]; ok {
			t.Logf("%s differs on purpose: %s", c.ID, why)
			continue
		}
		// batchd's number has an exponent of at most two digits (a finite
		// double); compared with llama.cpp's, the rest must be the same.
		same := strings.ReplaceAll(got, "number ::= "+NumberRule+" space", "number ::= "+LlamaCppNumberRule+" space")
		if same != c.FromLlamaCpp {
			t.Errorf("%s:\n got %s\nwant %s", c.ID, got, c.FromLlamaCpp)
		}
		if _, err := Parse(got); err != nil {
			t.Errorf("%s: the GBNF does not parse: %v", c.ID, err)
		}
	}
}
