package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestWindowGroupHoldsOnlyTheWindow: gemma3's and gpt-oss's prompts longer
// than their windows run in chunks of 16 tokens with a window group far
// smaller than a prompt (its sliding layers' blocks go back as the queries
// move past them), together, again from the prefix cache, and three at
// once; the group never holds more than the sequences' windows and one
// step's chunk. gemma3 writes llama.cpp's greedy tokens; gpt-oss (whose
// long prompt llama.cpp's own builds part on: TestGptOssMatchesLlamaCpp)
// writes what it writes with every layer in the main blocks, and so does
// a synthesized gemma4 (per-layer embeddings; its last layers read the
// K and V of earlier ones, in their groups: TestGemma4MatchesLlamaCppLive
// compares it with llama.cpp).
func TestWindowGroupHoldsOnlyTheWindow(t *testing.T) {
	for _, arch := range []string{"gemma3", "gpt-oss", "gemma4"} {
		t.Run(arch, func(t *testing.T) {
			var goldens []testmodels.ArchGolden
			path := filepath.Join(testmodels.Dir(t), "arch2", "tiny-"+arch+".gguf")
			if arch == "gemma4" {
				path, goldens = gemma4File(t)
			} else {
				goldens = testmodels.ArchGoldensFile(t, filepath.Join("arch2", "tiny-"+arch+".golden.json"))
			}
			m, err := model.Load(path, model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var long []testmodels.ArchGolden
			for _, g := range goldens {
				if len(g.PromptTokens) > m.Config.SlidingWindow {
					long = append(long, g)
				}
			}
			if len(long) == 0 {
				t.Fatal("no golden prompt is longer than the window")
			}
			const bs, step = 4, 16
			o := engineOpts{blocks: 160, blockSize: bs, sched: sched.Config{MaxNumBatchedTokens: step}}
			if arch == "gpt-oss" {
				o.quantDot = "int8"
			}
			if arch != "gemma3" {
				long = allLayers(t, m, o, long)
			}
			lay, _ := layout(m, o)
			if lay.Tables == 0 {
				t.Fatalf("no window groups: %+v", lay)
			}
			var gate sync.Mutex
			o.gate = &gate
			var mu sync.Mutex
			peakMain, peakWin := 0, 0
			o.watch = func(e *Engine) {
				u := e.pool.Usage()
				mu.Lock()
				peakMain, peakWin = max(peakMain, u.Used-u.WindowUsed), max(peakWin, u.WindowUsed)
				mu.Unlock()
			}
			e := startEngine(t, m, o)
			// One sequence holds its window's blocks, the one it writes into
			// and at most a chunk's, in each sliding group.
			perSeq := (m.Config.SlidingWindow+bs-1)/bs + 1
			longest := long[len(long)-1]
			for pass, batch := range [][]testmodels.ArchGolden{long, long, {longest, longest, longest}} {
				mu.Lock()
				peakMain, peakWin = 0, 0
				mu.Unlock()
				streams := submitWhole(t, e, &gate, batch)
				cached := 0
				for i, st := range streams {
					_, toks, done, err := st.Wait(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					cached += done.Usage.CachedPromptTokens
					compareArch(t, arch, batch[i], toks, done.Finish)
				}
				g := batch[len(batch)-1]
				need := (len(g.PromptTokens) + len(g.OutputTokens) + bs - 1) / bs
				mu.Lock()
				peakMain, peakWin := peakMain, peakWin
				mu.Unlock()
				if bound := lay.Tables * (len(batch)*perSeq + (step+bs-1)/bs + 1); peakWin > bound || peakMain < need {
					t.Errorf("pass %d: peak %d main and %d window blocks (want at most %d while the main blocks reach %d)",
						pass, peakMain, peakWin, bound, need)
				}
				if pass > 0 && cached == 0 {
					t.Errorf("pass %d: no prompt token came from the prefix cache", pass)
				}
				t.Logf("pass %d: %d sequences, peak %d main blocks, %d window blocks, %d prompt tokens cached", pass, len(batch), peakMain, peakWin, cached)
			}
			if st := e.Stats(); st.KVBlocksUsed != 0 || st.KVWindowBlocksUsed != 0 || st.KVWindowBlocksCached == 0 {
				t.Errorf("stats: %d blocks still used (%d window), %d window blocks cached", st.KVBlocksUsed,
					st.KVWindowBlocksUsed, st.KVWindowBlocksCached)
			}
		})
	}
}

// gemma4File writes a tiny gemma4 (E2B's layout, a window of 8) and
// prompts longer than the window, 8 tokens to generate each.
func gemma4File(t *testing.T) (string, []testmodels.ArchGolden) {
	o := synth.Gemma4Options{Dim: 128, Layers: 6, Heads: 4, FFN: 256, Vocab: 512, Context: 256, Window: 8,
		HeadSWA: 32, HeadFull: 64, KVSWA: 2, KVFull: 1, Slide: []bool{true, false, true, false, true, false},
		KVShared: 2, PerLayer: 32, DoubleFFN: true, Softcap: 30, DType: quant.F32, Seed: 4}
	path := filepath.Join(t.TempDir(), "gemma4.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := synth.WriteGemma4(f, o); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	var goldens []testmodels.ArchGolden
	for _, n := range []int{12, 27, 45} {
		g := testmodels.ArchGolden{PromptTokens: []int{1}, OutputTokens: make([]int, 8)}
		for range n {
			g.PromptTokens = append(g.PromptTokens, 3+rng.IntN(o.Vocab-3))
		}
		goldens = append(goldens, g)
	}
	return path, goldens
}

// allLayers is goldens with the outputs the engine writes with every
// layer in the main blocks.
func allLayers(t *testing.T, m *model.Model, o engineOpts, goldens []testmodels.ArchGolden) []testmodels.ArchGolden {
	o.allLayers = true
	e := startEngine(t, m, o)
	var out []testmodels.ArchGolden
	for _, g := range goldens {
		st, err := e.Submit(context.Background(), Request{Tokens: g.PromptTokens, MaxTokens: len(g.OutputTokens)})
		if err != nil {
			t.Fatal(err)
		}
		_, toks, _, err := st.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		g.OutputTokens, g.Stop = toks, ""
		out = append(out, g)
	}
	return out
}

// TestWindowGroupSavedCache: a windowed pool's prefix cache, saved at
// shutdown with both groups' blocks, serves a new engine's prompt from the
// cache, and the tokens are llama.cpp's.
func TestWindowGroupSavedCache(t *testing.T) {
	goldens := testmodels.ArchGoldensFile(t, filepath.Join("arch2", "tiny-gemma3.golden.json"))
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch2", "tiny-gemma3.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g := goldens[0]
	for _, c := range goldens {
		if len(c.PromptTokens) > len(g.PromptTokens) {
			g = c
		}
	}
	file := filepath.Join(t.TempDir(), "prefix-cache")
	o := Options{NumBlocks: 400, BlockSize: 4, Windowed: true, CacheFile: file, CacheIdentity: "gemma3",
		Scheduler: sched.Config{MaxNumBatchedTokens: 16}}
	ask := func(e *Engine) int {
		st, err := e.Submit(context.Background(), Request{Tokens: g.PromptTokens, MaxTokens: len(g.OutputTokens)})
		if err != nil {
			t.Fatal(err)
		}
		_, toks, done, err := st.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		compareArch(t, "saved cache", g, toks, done.Finish)
		return done.Usage.CachedPromptTokens
	}
	e, stop := warmEngineWith(t, m, o)
	ask(e)
	stop()
	e2, _ := warmEngineWith(t, m, o)
	st := e2.Stats()
	if st.KVBlocksCached <= st.KVWindowBlocksCached || st.KVWindowBlocksCached == 0 {
		t.Fatalf("loaded %d main and %d window blocks", st.KVBlocksCached, st.KVWindowBlocksCached)
	}
	if cached := ask(e2); cached < len(g.PromptTokens)-2*o.BlockSize {
		t.Fatalf("%d of %d prompt tokens from the loaded cache", cached, len(g.PromptTokens))
	}
}

// TestWindowGroupConcurrency runs what TestWindowGroupFitsFiveTimes
// (serve) plans for, through the engine: Gemma 3's layer pattern (tiny
// gemma3: five sliding layers to one, a window of 32) at 32 windows of
// context, 64 requests of 1000 prompt and 200 generated tokens in a pool
// that holds 8 such sequences with every layer in a block. The peak of
// sequences holding 1000 tokens or more at once is counted each way.
func TestWindowGroupConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 115k tokens")
	}
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch2", "tiny-gemma3.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const bs, n, gen = 4, 1000, 200
	peak := map[bool]int{}
	var mu sync.Mutex // the first engine's loop runs on beside the second's
	for _, all := range []bool{true, false} {
		o := engineOpts{blocks: 8 * (n + gen) / bs, blockSize: bs, allLayers: all,
			sched: sched.Config{MaxNumSeqs: 64, MaxNumBatchedTokens: 512}, watch: func(e *Engine) {
				whole := 0
				for _, rs := range e.states {
					if len(e.pool.Blocks(kvcache.SeqID(rs.seq.ID)))*bs >= n {
						whole++
					}
				}
				mu.Lock()
				peak[all] = max(peak[all], whole)
				mu.Unlock()
			}}
		e := startEngine(t, m, o)
		var streams []*Stream
		for i := range 64 {
			toks := make([]int, n)
			for j := range toks {
				toks[j] = 2 + (i*7919+j*31)%31000
			}
			st, err := e.Submit(context.Background(), Request{Tokens: toks, MaxTokens: gen})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, st)
		}
		for _, st := range streams {
			if _, _, _, err := st.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		t.Logf("every layer in a block %v: at most %d sequences of %d tokens or more at once (preemptions %d)", all, peak[all], n, e.Stats().Preemptions)
		mu.Unlock()
	}
	mu.Lock()
	all, grouped := peak[true], peak[false]
	mu.Unlock()
	if all == 0 || float64(grouped) < 4*float64(all) {
		t.Errorf("window groups held %d whole sequences at once, every layer in a block %d: want about 5x", grouped, all)
	}
}
