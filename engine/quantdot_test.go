package engine

import (
	"context"
	"github.com/batchd/batchd/engine/sched"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestAutoQuantDotInvisible: under QuantDot "auto" (prompt tokens on the
// float path, generated ones on int8, on the AVX2 kernels for Q5_0: with
// VNNI every token takes int8, and the prompt tokens of the formats with
// AVX2 row kernels take it on AVX2 too) a request's tokens and
// log-probabilities, bit for bit, are the same alone, batched, preempted,
// with the prefix cache warm, and when its prompt holds another request's
// output (whose generated blocks must not be shared: they were computed
// on the other path).
func TestAutoQuantDotInvisible(t *testing.T) {
	m, err := model.Load(filepath.Join(testmodels.Dir(t), "quant", "tiny-quant-Q5_0.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var prompts [][]int
	for _, g := range testmodels.ArchGoldensFile(t, filepath.Join("quant", "tiny-quant-Q5_0.dequant-f32.golden.json")) {
		if len(g.PromptTokens) > 0 {
			prompts = append(prompts, g.PromptTokens)
		}
	}
	const n = 12
	type result struct {
		toks []int
		lps  []float32
	}
	var start func() // when set, run calls it once every request is in (a loop started late)
	run := func(e *Engine, batch [][]int) []result {
		var streams []*Stream
		for _, p := range batch {
			st, err := e.Submit(context.Background(), Request{Tokens: p, MaxTokens: n, IgnoreEOS: true, Logprobs: true})
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, st)
		}
		if start != nil {
			start()
			start = nil
		}
		var out []result
		for _, st := range streams {
			var r result
			for {
				ev, ok, err := st.Recv(context.Background())
				if err != nil || !ok {
					break
				}
				r.toks = append(r.toks, ev.Tokens...)
				for _, lp := range ev.Logprobs {
					r.lps = append(r.lps, lp.Logprob)
				}
			}
			out = append(out, r)
		}
		return out
	}
	same := func(what string, got, want result) {
		t.Helper()
		if !slices.Equal(got.toks, want.toks) || len(got.lps) != len(want.lps) {
			t.Fatalf("%s: tokens %v, alone %v", what, got.toks, want.toks)
		}
		for i := range got.lps {
			if math.Float32bits(got.lps[i]) != math.Float32bits(want.lps[i]) {
				t.Fatalf("%s: token %d log-probability %v, alone %v", what, i, got.lps[i], want.lps[i])
			}
		}
	}
	alone := func(p []int) result {
		return run(startEngine(t, m, engineOpts{quantDot: "auto", kernels: "avx2", blockSize: 4}), [][]int{p})[0]
	}
	want := make([]result, len(prompts))
	for i, p := range prompts {
		want[i] = alone(p)
	}
	// The first token comes from the prompt alone: exactly the float path's.
	// Later ones come from generated tokens, on the int8 path: not the same.
	float := run(startEngine(t, m, engineOpts{quantDot: "float", kernels: "avx2"}), prompts[:1])[0]
	if math.Float32bits(float.lps[0]) != math.Float32bits(want[0].lps[0]) || slices.Equal(float.lps, want[0].lps) {
		t.Fatalf("auto %v, float %v: want the first alike and a later one not", want[0].lps, float.lps)
	}
	for i, r := range run(startEngine(t, m, engineOpts{quantDot: "auto", kernels: "avx2"}), prompts) {
		same("batched", r, want[i])
	}
	// Every request is queued before the loop starts, so that they are
	// admitted together and the tiny pool must preempt (under load a loop
	// already running could finish one before the next arrived).
	e := startEngine(t, m, engineOpts{quantDot: "auto", kernels: "avx2", blocks: 12, blockSize: 4, noStart: true, sched: sched.Config{MaxNumBatchedTokens: 8}})
	ctx, cancel := context.WithCancel(context.Background())
	start = func() { go func() { _ = e.Run(ctx) }() }
	for i, r := range run(e, prompts) {
		same("preempted", r, want[i])
	}
	cancel()
	<-e.Done()
	if e.Stats().Preemptions == 0 {
		t.Error("no preemption in the tiny pool")
	}
	warm := startEngine(t, m, engineOpts{quantDot: "auto", kernels: "avx2", blockSize: 4})
	for pass := range 2 {
		for i, p := range prompts {
			same("prefix cache, pass "+string(rune('1'+pass)), run(warm, [][]int{p})[0], want[i])
		}
	}
	// A follow-up whose prompt is the first request's prompt and output:
	// computed fresh, those output tokens are prompt tokens (float path).
	follow := append(slices.Clone(prompts[0]), want[0].toks...)
	same("follow-up after its source", run(warm, [][]int{follow})[0], alone(follow))
}
