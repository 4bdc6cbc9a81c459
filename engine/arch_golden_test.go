package engine

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/batchd/batchd/engine/sched"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestArchGreedyMatchesLlamaCpp: on every tiny model in models/arch and
// models/arch2, the
// engine's greedy tokens are llama.cpp's: each prompt alone, all in one
// batch, under preemption in a tiny pool, and again with the prefix cache
// warm (the second pass reuses the first's blocks), and with n-gram
// speculation alone, batched and preempted, and with the model as its own
// draft model (a recurrent model, qwen35, runs every mode without drafts;
// its prefix hits resume from kept states). Where llama.cpp's top
// two are within 1e-4 the tokens may part (the test says where).
func TestArchGreedyMatchesLlamaCpp(t *testing.T) {
	var refused, ran uint64
	defer func() {
		if ran > 0 && refused == 0 && !t.Failed() {
			t.Error("speculation never had a draft refused: the test did not exercise rejection")
		}
	}()
	type family struct{ dir, arch string }
	var families []family
	for _, a := range testmodels.ArchModels {
		families = append(families, family{"arch", a})
	}
	for _, a := range testmodels.Arch2Models { // the newer families: mixtures of experts first
		families = append(families, family{"arch2", a})
	}
	for _, f := range families {
		arch := f.arch
		t.Run(arch, func(t *testing.T) {
			goldens := testmodels.ArchGoldensFile(t, filepath.Join(f.dir, "tiny-"+arch+".golden.json"))
			m, err := model.Load(filepath.Join(testmodels.Dir(t), f.dir, "tiny-"+arch+".gguf"), model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var gs []testmodels.ArchGolden
			for _, g := range goldens {
				if len(g.PromptTokens) > 0 { // llama.cpp generates nothing for no tokens
					gs = append(gs, g)
				}
			}
			// n-gram drafts on a batch of up to 16: random-weight models
			// repeat themselves, so drafts are kept and refused alike.
			ngram := SpecConfig{Method: "ngram", MaxBatch: 16, Ungated: true}
			// The tiny pools preempt: 30 blocks of 4 for arch's prompts;
			// arch2's passage, longer than such a pool, runs in the other
			// modes, and its short prompts in 14 and 10 blocks.
			short, pool, specPool := gs, 30, 24
			if f.dir == "arch2" {
				short, pool, specPool = nil, 14, 10
				for _, g := range gs {
					if len(g.PromptTokens)+len(g.OutputTokens) <= 48 {
						short = append(short, g)
					}
				}
			}
			var drafted, kept uint64
			for _, mode := range []struct {
				name     string
				o        engineOpts
				together bool
				passes   int
			}{
				{"alone", engineOpts{}, false, 1},
				{"batched", engineOpts{}, true, 1},
				{"preempted", engineOpts{blocks: pool, blockSize: 4, sched: sched.Config{MaxNumBatchedTokens: 8}}, true, 1},
				{"prefix-cache", engineOpts{blockSize: 4}, false, 2},
				{"speculative", engineOpts{spec: ngram}, false, 1},
				{"speculative-batched", engineOpts{spec: ngram}, true, 1},
				{"speculative-preempted", engineOpts{blocks: specPool, blockSize: 4, spec: ngram,
					sched: sched.Config{MaxNumBatchedTokens: 8}}, true, 1},
				// The model as its own draft: every draft is kept, so
				// each verification ends with the target's own token.
				{"draft-model-self", engineOpts{spec: SpecConfig{Method: "draft", MaxBatch: 16, Ungated: true}, draft: m}, true, 1},
			} {
				// A batch arrives whole: the loop takes it in one turn, so that
				// the tiny pools preempt however the machine schedules us.
				var gate sync.Mutex
				o := mode.o
				o.gate = &gate
				e := startEngine(t, m, o)
				preempted, cached := 0, 0
				run := func(batch []testmodels.ArchGolden) {
					streams := submitWhole(t, e, &gate, batch)
					for i, st := range streams {
						_, toks, done, err := st.Wait(context.Background())
						if err != nil {
							t.Fatal(err)
						}
						preempted += done.Preemptions
						cached += done.Usage.CachedPromptTokens
						compareArch(t, mode.name, batch[i], toks, done.Finish)
					}
				}
				prompts := gs
				if mode.o.blocks > 0 {
					prompts = short
				}
				for range mode.passes {
					if mode.together {
						run(prompts)
						continue
					}
					for _, g := range prompts {
						run([]testmodels.ArchGolden{g})
					}
				}
				st := e.Stats()
				if mode.o.spec.Method != "" {
					t.Logf("%s: %d drafted, %d kept over %d verifications", mode.name, st.SpecDrafted, st.SpecAccepted, st.SpecShares)
				}
				if mode.o.spec.Method == "ngram" {
					drafted += st.SpecDrafted
					kept += st.SpecAccepted
				}
				// A recurrent model drafts nothing: a refused draft would
				// stay in its state (backend.Recurrent). Its cached prefixes
				// resume from kept states.
				recurrent := m.Config.Recurrent.On()
				switch {
				case recurrent && st.SpecDrafted != 0:
					t.Errorf("%s: a recurrent model took %d drafts", mode.name, st.SpecDrafted)
				case mode.name == "preempted" && preempted == 0:
					t.Errorf("no preemption in the tiny pool")
				case mode.name == "prefix-cache" && cached == 0:
					t.Errorf("no prompt token came from the prefix cache")
				case recurrent:
				case mode.name == "speculative-preempted" && preempted == 0:
					t.Errorf("no preemption in the tiny pool with speculation")
				case mode.o.draft != nil && (st.SpecDrafted == 0 || st.SpecAccepted != st.SpecDrafted):
					t.Errorf("the model as its own draft: %d of %d drafts kept, want all", st.SpecAccepted, st.SpecDrafted)
				}
			}
			if kept == 0 && f.dir == "arch" { // arch2's files need not repeat themselves
				t.Errorf("speculation drafted %d and kept none", drafted)
			}
			refused += drafted - kept
			ran++
		})
	}
}

func compareArch(t *testing.T, mode string, g testmodels.ArchGolden, got []int, finish FinishReason) {
	t.Helper()
	want := g.OutputTokens
	if g.Stop == "eos" && finish != FinishStop && len(got) == len(want) {
		t.Fatalf("%s, prompt %q: finished %s, want a stop on end of generation", mode, g.Prompt, finish)
	}
	for i := range max(len(got), len(want)) {
		if i < len(got) && i < len(want) && got[i] == want[i] {
			continue
		}
		if g.NearTie(i) {
			t.Logf("%s, prompt %q: parts at token %d, a near tie in llama.cpp's top two", mode, g.Prompt, i)
			return
		}
		t.Fatalf("%s, prompt %q: token %d differs:\n got %v\nwant %v", mode, g.Prompt, i, got, want)
	}
}

// submitWhole submits the goldens' prompts (each for its output's length)
// while holding gate, so that the loop takes them in one turn.
func submitWhole(t *testing.T, e *Engine, gate *sync.Mutex, batch []testmodels.ArchGolden) []*Stream {
	t.Helper()
	gate.Lock()
	defer gate.Unlock()
	var streams []*Stream
	for _, g := range batch {
		st, err := e.Submit(context.Background(), Request{Tokens: g.PromptTokens, MaxTokens: len(g.OutputTokens)})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	return streams
}
