package engine

import (
	"context"
	"encoding/json"
	"github.com/batchd/batchd/engine/sched"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
)

// quantGolden is one llama.cpp generation on a quantized file's F32 twin.
type quantGolden struct {
	Prompt       string         `json:"prompt"`
	PromptTokens []int          `json:"prompt_tokens"`
	OutputTokens []int          `json:"output_tokens"`
	Stop         string         `json:"stop"` // limit or eos
	Top5         [][][2]float64 `json:"top5"` // per step: [id, logprob] best first
}

// TestQuantizedGreedyMatchesLlamaCpp: batchd computes in float32 from exactly
// dequantized weights, so its greedy tokens on each quantized file equal
// llama.cpp's on the file's dequantized twin: alone, all prompts in one
// batch, under preemption in a tiny pool, and with n-gram speculation and
// a draft model (the Q4_0 file of the same weights) alone and batched. Where llama.cpp's top two
// log-probabilities are within 1e-4 the tokens may part there (a near tie).
func TestQuantizedGreedyMatchesLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "quant")
	files, _ := filepath.Glob(filepath.Join(dir, "tiny-quant-*.dequant-f32.golden.json"))
	if len(files) == 0 {
		t.Skip("no models/quant goldens")
	}
	var keptDraft uint64 // the draft model's kept tokens over every file
	defer func() {
		if keptDraft == 0 && !t.Failed() {
			t.Error("the draft model's drafts were never kept: the test did not exercise acceptance")
		}
	}()
	for _, gp := range files {
		name := strings.TrimSuffix(filepath.Base(gp), ".dequant-f32.golden.json")
		t.Run(strings.TrimPrefix(name, "tiny-quant-"), func(t *testing.T) {
			var goldens []quantGolden
			b, err := os.ReadFile(gp)
			if err == nil {
				err = json.Unmarshal(b, &goldens)
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := model.Load(filepath.Join(dir, name+".gguf"), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			draft, err := model.Load(filepath.Join(dir, "tiny-quant-Q4_0.gguf"), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer draft.Close()
			drafted := SpecConfig{Method: "draft", MaxBatch: 16, Ungated: true}
			for _, mode := range []struct {
				name     string
				o        engineOpts
				together bool
			}{
				{"alone", engineOpts{}, false},
				{"batched", engineOpts{}, true},
				{"preempted", engineOpts{blocks: 24, blockSize: 4, sched: sched.Config{MaxNumBatchedTokens: 8}}, true},
				{"speculative", engineOpts{spec: SpecConfig{Method: "ngram", MaxBatch: 16, Ungated: true}}, false},
				{"speculative-batched", engineOpts{spec: SpecConfig{Method: "ngram", MaxBatch: 16, Ungated: true}}, true},
				{"draft-model", engineOpts{spec: drafted, draft: draft}, false},
				{"draft-model-batched", engineOpts{spec: drafted, draft: draft}, true},
				{"draft-model-preempted", engineOpts{blocks: 24, blockSize: 4, sched: sched.Config{MaxNumBatchedTokens: 8},
					spec: drafted, draft: draft}, true},
			} {
				e := startEngine(t, m, mode.o)
				preempted := 0
				run := func(gs []quantGolden) {
					var streams []*Stream
					for _, g := range gs {
						st, err := e.Submit(context.Background(), Request{Tokens: g.PromptTokens, MaxTokens: len(g.OutputTokens) + 1,
							IgnoreEOS: true, StopTokenIDs: []int{2}}) // EOS; <s> does not end these files' runs
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
						preempted += done.Preemptions
						compareGolden(t, mode.name, gs[i], toks, done.Finish)
					}
				}
				if mode.together {
					run(goldens)
				} else {
					for _, g := range goldens {
						run([]quantGolden{g})
					}
				}
				if mode.name == "preempted" {
					t.Logf("%d preemptions", preempted)
				}
				st := e.Stats()
				if mode.o.spec.Method != "" {
					t.Logf("%s: %d drafted, %d kept", mode.name, st.SpecDrafted, st.SpecAccepted)
				}
				switch {
				case mode.o.spec.Method != "" && st.SpecDrafted == 0:
					t.Errorf("%s: nothing drafted", mode.name)
				case mode.o.spec.Method == "ngram" && st.SpecAccepted == 0:
					t.Errorf("%s: %d drafted, none kept", mode.name, st.SpecDrafted)
				}
				if mode.o.draft != nil {
					keptDraft += st.SpecAccepted
				}
			}
		})
	}
}

func compareGolden(t *testing.T, mode string, g quantGolden, got []int, finish FinishReason) {
	t.Helper()
	want := g.OutputTokens
	if g.Stop == "eos" && len(want) > 0 && want[len(want)-1] == 2 {
		// llama.cpp lists the EOS it sampled; batchd ends with it as the stop.
		want = want[:len(want)-1]
		if finish != FinishStop && len(got) == len(want) {
			t.Fatalf("%s, prompt %q: finished %s, want stop on EOS", mode, g.Prompt, finish)
		}
	}
	if g.Stop == "limit" && len(got) > len(want) {
		got = got[:len(want)]
	}
	for i := range max(len(got), len(want)) {
		if i < len(got) && i < len(want) && got[i] == want[i] {
			continue
		}
		if i < len(g.Top5) && len(g.Top5[i]) > 1 && math.Abs(g.Top5[i][0][1]-g.Top5[i][1][1]) < 1e-4 {
			t.Logf("%s, prompt %q: parts at token %d, a near tie in llama.cpp's top two", mode, g.Prompt, i)
			return
		}
		t.Fatalf("%s, prompt %q: token %d differs:\n got %v\nwant %v", mode, g.Prompt, i, got, want)
	}
}
