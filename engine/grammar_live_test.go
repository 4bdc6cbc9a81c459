package engine

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestSchemaConversionMatchesLlamaCppLive: the reference schemas and 200
// random ones become the GBNF llama.cpp v0.5.0's json_schema_to_grammar
// writes, byte for byte, but where batchd enforces more on purpose (real
// dates, number bounds, an exponent of at most two digits).
func TestSchemaConversionMatchesLlamaCppLive(t *testing.T) {
	ref := llamacpp.New(t, llamacpp.Options{})
	var schemas [][]byte
	for _, g := range grammarGoldens(t) {
		if g.Schema != nil {
			schemas = append(schemas, g.Schema)
		}
	}
	for i := range 200 {
		g := &schemaGen{r: rand.New(rand.NewPCG(99, uint64(i))), defs: map[string]any{}}
		s := g.schema(0)
		if len(g.defs) > 0 {
			s["$defs"] = g.defs
		}
		b, _ := json.Marshal(s)
		schemas = append(schemas, b)
	}
	compared := 0
	for _, s := range schemas {
		if strings.Contains(string(s), `"date`) || strings.Contains(string(s), `"number"`) && strings.Contains(string(s), "imum") ||
			strings.Contains(string(s), `\\d`) || strings.Contains(string(s), `\\w`) {
			continue // enforced more than llama.cpp on purpose: real dates, number bounds, \d and \w in patterns
		}
		want, err := ref.SchemaGBNF(s)
		if err != nil {
			continue // llama.cpp refuses it; batchd's own checks cover it
		}
		got, err := grammar.SchemaGBNF(context.Background(), s, grammar.SchemaOptions{})
		if err != nil {
			t.Errorf("%s: llama.cpp converts it, batchd: %v", s, err)
			continue
		}
		// A finite number, and a pattern's "." that keeps the JSON string
		// valid: batchd's on purpose, the rest must be llama.cpp's.
		got = strings.ReplaceAll(got, grammar.NumberRule, grammar.LlamaCppNumberRule)
		got = strings.ReplaceAll(got, `dot ::= [^"\\\x7F\x00-\x1F]`, `dot ::= [^\x0A\x0D]`)
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", s, got, want)
		}
		compared++
	}
	t.Logf("%d schemas converted as llama.cpp %s converts them", compared, llamacpp.Release)
}

// TestConstrainedGreedyMatchesLlamaCppLive: under every reference grammar
// and schema (as batchd's GBNF, which llama.cpp's grammar engine runs
// too), the engine's greedy tokens are those llama.cpp v0.5.0 picks now,
// F32 K and V; a step the stored reference marks a near tie may part.
func TestConstrainedGreedyMatchesLlamaCppLive(t *testing.T) {
	ref := llamacpp.New(t, llamacpp.Options{})
	byModel := map[string][]grammarGolden{}
	for _, g := range grammarGoldens(t) {
		byModel[g.Model] = append(byModel[g.Model], g)
	}
	for name, gs := range byModel {
		path := filepath.Join(testmodels.Dir(t), "arch", name)
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e := startEngine(t, m, engineOpts{kvType: quant.F32})
		if _, err := ref.LoadModel(path, false); err != nil {
			t.Fatal(err)
		}
		if err := ref.Context(llamacpp.ContextOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			src := g.GBNF
			if g.Schema != nil {
				if src, err = grammar.SchemaGBNF(context.Background(), g.Schema, grammar.SchemaOptions{Strict: true}); err != nil {
					t.Fatal(err)
				}
			}
			want, err := ref.Constrained(src, g.PromptTokens, 96)
			if err != nil {
				t.Fatalf("%s: %v", g.ID, err)
			}
			gr, err := grammar.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			st, err := e.Submit(context.Background(), Request{Tokens: g.PromptTokens, MaxTokens: 96, Grammar: gr})
			if err != nil {
				t.Fatal(err)
			}
			_, got, done, err := st.Wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			live := g
			live.OutputTokens, live.Stop = stripEOG(m, want)
			compareGrammar(t, "live", live, got, done)
		}
		m.Close()
	}
}

// stripEOG takes the end token llama.cpp sampled off its tokens, as the
// engine reports an ended request.
func stripEOG(m *model.Model, toks []int) ([]int, string) {
	if n := len(toks); n > 0 && m.IsStop(toks[n-1]) {
		return toks[:n-1], "eos"
	}
	return toks, "limit"
}
