package engine

import (
	"context"
	"encoding/json"
	"github.com/batchd/batchd/engine/sched"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/testing/testmodels"
)

// grammarGolden is one of llama.cpp's constrained greedy generations in
// models/grammar.
type grammarGolden struct {
	ID           string          `json:"id"`
	Model        string          `json:"model"`
	PromptTokens []int           `json:"prompt_tokens"`
	Schema       json.RawMessage `json:"json_schema"`
	GBNF         string          `json:"grammar"`
	FromLlamaCpp string          `json:"grammar_from_llama_cpp"`
	OutputTokens []int           `json:"output_tokens"`
	Stop         string          `json:"stop"`
	NearTies     []int           `json:"near_ties"`
}

func grammarGoldens(t *testing.T) []grammarGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "grammar", "grammar-cases.json"))
	if err != nil {
		t.Skip(err)
	}
	var gs []grammarGolden
	if err := json.Unmarshal(b, &gs); err != nil {
		t.Fatal(err)
	}
	return gs
}

func (g grammarGolden) compile(t *testing.T) *grammar.Grammar {
	t.Helper()
	var gr *grammar.Grammar
	var err error
	switch {
	case g.FromLlamaCpp != "":
		// The grammar the reference ran (the older build's conversion of
		// the schema): this test is of the grammar engine; the converter is
		// checked against llama.cpp v0.5.0 live
		// (TestSchemaConversionMatchesLlamaCppLive).
		gr, err = grammar.Parse(g.FromLlamaCpp)
	case g.Schema != nil:
		gr, err = grammar.FromSchema(context.Background(), g.Schema, grammar.SchemaOptions{Strict: true})
	default:
		gr, err = grammar.Parse(g.GBNF)
	}
	if err != nil {
		t.Fatalf("%s: %v", g.ID, err)
	}
	return gr
}

// TestConstrainedGreedyMatchesLlamaCpp: under every reference schema and
// grammar, the engine's greedy tokens are llama.cpp's (float32 K and V, as
// the references were made), each alone, all together, and preempted in a
// tiny pool; a step llama.cpp marks as a near tie may part.
func TestConstrainedGreedyMatchesLlamaCpp(t *testing.T) {
	byModel := map[string][]grammarGolden{}
	for _, g := range grammarGoldens(t) {
		byModel[g.Model] = append(byModel[g.Model], g)
	}
	for name, gs := range byModel {
		t.Run(name, func(t *testing.T) {
			m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", name), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for _, mode := range []struct {
				name     string
				o        engineOpts
				together bool
			}{
				{"alone", engineOpts{kvType: quant.F32}, false},
				{"batched", engineOpts{kvType: quant.F32}, true},
				{"preempted", engineOpts{kvType: quant.F32, blocks: 40, blockSize: 4, sched: sched.Config{MaxNumBatchedTokens: 8}}, true},
				{"speculative", engineOpts{kvType: quant.F32, spec: SpecConfig{Method: "ngram", MaxBatch: 32, Ungated: true}}, true},
			} {
				e := startEngine(t, m, mode.o)
				run := func(batch []grammarGolden) {
					var streams []*Stream
					for _, g := range batch {
						st, err := e.Submit(context.Background(), Request{Tokens: g.PromptTokens, MaxTokens: 96, Grammar: g.compile(t)})
						if err != nil {
							t.Fatal(err)
						}
						streams = append(streams, st)
					}
					for i, st := range streams {
						_, toks, done, err := st.Wait(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						compareGrammar(t, mode.name, batch[i], toks, done)
					}
				}
				if mode.together {
					run(gs)
				} else {
					for _, g := range gs {
						run([]grammarGolden{g})
					}
				}
				if st := e.Stats(); mode.o.spec.Method != "" {
					t.Logf("speculative: %d drafted, %d kept over %d verifications", st.SpecDrafted, st.SpecAccepted, st.SpecShares)
					if st.SpecAccepted == 0 {
						t.Errorf("speculative: no draft kept under the grammars")
					}
				}
			}
		})
	}
}

func compareGrammar(t *testing.T, mode string, g grammarGolden, got []int, done Event) {
	t.Helper()
	for i := range max(len(got), len(g.OutputTokens)) {
		if i < len(got) && i < len(g.OutputTokens) && got[i] == g.OutputTokens[i] {
			continue
		}
		if slices.Contains(g.NearTies, i) {
			t.Logf("%s %s: parts at token %d, a near tie", mode, g.ID, i)
			return
		}
		t.Errorf("%s %s: token %d differs (finish %s, %v):\n got %v\nwant %v", mode, g.ID, i, done.Finish, done.Err, got, g.OutputTokens)
		return
	}
	want := FinishLength
	if g.Stop == "eos" {
		want = FinishStop
	}
	if done.Finish != want {
		t.Errorf("%s %s: finished %s (%v), want %s", mode, g.ID, done.Finish, done.Err, want)
	}
}

// TestConstrainedBatchInvariance: a constrained request sampled at
// temperature 0.8 gives the same tokens alone and in a batch beside
// unconstrained and differently constrained ones, chunked and preempted.
func TestConstrainedBatchInvariance(t *testing.T) {
	gs := grammarGoldens(t)
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", "tiny-qwen2.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var qwen []grammarGolden
	for _, g := range gs {
		if g.Model == "tiny-qwen2.gguf" {
			qwen = append(qwen, g)
		}
	}
	req := func(i int) Request {
		g := qwen[i%len(qwen)]
		r := Request{Tokens: g.PromptTokens, MaxTokens: 32, Sampling: sample.Params{Temperature: 0.8, Seed: uint64(i)}}
		if i%3 != 2 { // every third unconstrained
			r.Grammar = g.compile(t)
		}
		return r
	}
	const n = 6
	alone := make([][]int, n)
	e := startEngine(t, m, engineOpts{kvType: quant.F32})
	for i := range n {
		st, err := e.Submit(context.Background(), req(i))
		if err != nil {
			t.Fatal(err)
		}
		_, alone[i], _, _ = st.Wait(context.Background())
	}
	tight := startEngine(t, m, engineOpts{kvType: quant.F32, blocks: 24, blockSize: 4, sched: sched.Config{MaxNumBatchedTokens: 8}})
	var streams []*Stream
	for i := range n {
		st, err := tight.Submit(context.Background(), req(i))
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	preempted := 0
	for i, st := range streams {
		_, toks, done, err := st.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		preempted += done.Preemptions
		if !slices.Equal(toks, alone[i]) {
			t.Errorf("request %d: batched %v, alone %v", i, toks, alone[i])
		}
	}
	if preempted == 0 {
		t.Error("nothing was preempted in the tiny pool")
	}
}
