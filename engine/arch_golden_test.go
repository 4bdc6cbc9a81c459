package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestArchGreedyMatchesLlamaCpp: on every tiny model in models/arch, the
// engine's greedy tokens are llama.cpp's: each prompt alone, all in one
// batch, under preemption in a tiny pool, and again with the prefix cache
// warm (the second pass reuses the first's blocks). Where llama.cpp's top
// two are within 1e-4 the tokens may part (the test says where).
func TestArchGreedyMatchesLlamaCpp(t *testing.T) {
	for _, arch := range testmodels.ArchModels {
		t.Run(arch, func(t *testing.T) {
			goldens := testmodels.ArchGoldens(t, arch)
			m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", "tiny-"+arch+".gguf"), model.LoadOptions{})
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
			for _, mode := range []struct {
				name     string
				o        engineOpts
				together bool
				passes   int
			}{
				{"alone", engineOpts{}, false, 1},
				{"batched", engineOpts{}, true, 1},
				{"preempted", engineOpts{blocks: 30, blockSize: 4, sched: SchedulerConfig{MaxNumBatchedTokens: 8}}, true, 1},
				{"prefix-cache", engineOpts{blockSize: 4}, false, 2},
			} {
				e := startEngine(t, m, mode.o)
				preempted, cached := 0, 0
				run := func(batch []testmodels.ArchGolden) {
					var streams []*Stream
					for _, g := range batch {
						st, err := e.Submit(context.Background(), Request{Tokens: g.PromptTokens, MaxTokens: len(g.OutputTokens)})
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
						cached += done.Usage.CachedPromptTokens
						compareArch(t, mode.name, batch[i], toks, done.Finish)
					}
				}
				for range mode.passes {
					if mode.together {
						run(gs)
						continue
					}
					for _, g := range gs {
						run([]testmodels.ArchGolden{g})
					}
				}
				switch {
				case mode.name == "preempted" && preempted == 0:
					t.Errorf("no preemption in the tiny pool")
				case mode.name == "prefix-cache" && cached == 0:
					t.Errorf("no prompt token came from the prefix cache")
				}
			}
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
