package engine

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/testmodels"
)

type toolGolden = testmodels.ToolCase

// TestToolGrammarsMatchLlamaCpp: under llama.cpp's tool grammars, lazy
// ones with their triggers, the engine's greedy tokens are llama.cpp's,
// alone, all of a model's cases together, and together with n-gram
// speculation (lazy grammars, triggers and stops under drafts).
func TestToolGrammarsMatchLlamaCpp(t *testing.T) {
	gs := testmodels.ToolCases(t)
	byModel := map[string][]toolGolden{}
	for _, g := range gs {
		byModel[g.Model] = append(byModel[g.Model], g)
	}
	for name, gs := range byModel {
		t.Run(name, func(t *testing.T) {
			m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", name), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			plain := startEngine(t, m, engineOpts{kvType: quant.F32})
			spec := startEngine(t, m, engineOpts{kvType: quant.F32, spec: SpecConfig{Method: "ngram", MaxBatch: 32, Ungated: true}})
			req := func(g toolGolden) Request {
				r := Request{Tokens: g.PromptTokens, MaxTokens: 128, Stop: g.StopStrings, Preserve: g.PreservedTokens}
				if g.Grammar != "" {
					gr, err := grammar.Parse(g.Grammar)
					if err != nil {
						t.Fatalf("%s: %v", g.ID, err)
					}
					r.Grammar = gr
					if g.GrammarLazy {
						r.GrammarTriggers = g.TriggerWords
						for _, id := range g.TriggerTokens {
							r.GrammarTriggers = append(r.GrammarTriggers, m.Tokenizer.PieceText(id))
						}
					}
				}
				return r
			}
			for _, run := range []struct {
				e        *Engine
				together bool
			}{{plain, false}, {plain, true}, {spec, true}} {
				e, together := run.e, run.together
				var streams []*Stream
				for i, g := range gs {
					st, err := e.Submit(context.Background(), req(g))
					if err != nil {
						t.Fatal(err)
					}
					streams = append(streams, st)
					if !together {
						_, toks, done, err := st.Wait(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						compareTool(t, together, gs[i], toks, done)
					}
				}
				if together {
					for i, st := range streams {
						_, toks, done, err := st.Wait(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						compareTool(t, together, gs[i], toks, done)
					}
				}
			}
			st := spec.Stats()
			t.Logf("speculative: %d drafted, %d kept over %d verifications", st.SpecDrafted, st.SpecAccepted, st.SpecShares)
		})
	}
}

func compareTool(t *testing.T, together bool, g toolGolden, got []int, done Event) {
	t.Helper()
	want := FinishLength
	if g.Stop == "eos" {
		want = FinishStop
	}
	if !slices.Equal(got, g.OutputTokens) || done.Finish != want {
		t.Errorf("%s (together %v): finish %s (%v), want %s\n got %v\nwant %v", g.ID, together, done.Finish, done.Err, want, got, g.OutputTokens)
	}
}
