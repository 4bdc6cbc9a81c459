package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestFourQueryPathsMatchOne: runs of four prompt tokens take the
// four-query kernels, on sliding layers each query from its own window's
// first position (F16 K and V; a q8_0 K with VNNI), and a single token's
// query heads go four at a time where four or more share a KV head (F16);
// either gives the logits that the same prompt fed three tokens at a time
// gives, bit for bit: gemma3's window of 21 (the four windows' starts
// cross block edges of 16) and of 2 (too narrow for four queries: one()
// takes them), with two and four query heads to a KV head, gpt-oss's
// window of 128 with its sinks and four heads to a KV head, and a llama
// with four, on prompts shorter and longer than the windows.
func TestFourQueryPathsMatchOne(t *testing.T) {
	files := []synth.Options{
		{Arch: "gemma3", Dim: 128, Layers: 6, Heads: 2, KVHeads: 1, HeadDim: 64, FFN: 128, Vocab: 300,
			Context: 256, DType: quant.F32, Seed: 7, Std: 0.05, Gemma: synth.GemmaOptions{Window: 21}},
		{Arch: "gemma3", Dim: 128, Layers: 6, Heads: 4, KVHeads: 1, HeadDim: 64, FFN: 128, Vocab: 300,
			Context: 256, DType: quant.F32, Seed: 9, Std: 0.05, Gemma: synth.GemmaOptions{Window: 21}},
		{Arch: "gemma3", Dim: 128, Layers: 6, Heads: 2, KVHeads: 1, HeadDim: 64, FFN: 128, Vocab: 300,
			Context: 256, DType: quant.F32, Seed: 8, Std: 0.05, Gemma: synth.GemmaOptions{Window: 2}},
		{Arch: "gpt-oss", Dim: 64, Layers: 2, Heads: 8, KVHeads: 2, HeadDim: 64, FFN: 64, Vocab: 300,
			Context: 256, DType: quant.F32, Seed: 21, Std: 0.08, Experts: 4, ExpertsUsed: 2, ExpertFFN: 32},
		{Dim: 128, Layers: 2, Heads: 8, KVHeads: 2, HeadDim: 64, FFN: 128, Vocab: 300,
			Context: 256, DType: quant.F32, Seed: 11, Std: 0.05},
	}
	const bs = 16
	for _, o := range files {
		path, _ := synth.WriteFile(t, o)
		m, err := model.Load(path, model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if (o.Arch == "") == m.Config.Sliding(0) {
			t.Fatalf("%s: layer 0 slides: %v", o.Arch, m.Config.Sliding(0))
		}
		for _, kv := range []backend.KVTypes{backend.SameKV(quant.F16), {K: quant.Q8_0, V: quant.F16}} {
			for _, n := range []int{19, 50, 173} {
				t.Run(fmt.Sprintf("%s-window%d-heads%d/%s/%d", o.Arch, m.Config.SlidingWindow, o.Heads/o.KVHeads, kv, n), func(t *testing.T) {
					prompt := make([]int, n)
					for i := range prompt {
						prompt[i] = 1 + (i*37+i*i)%299
					}
					table := make([]int, n/bs+1)
					for i := range table {
						table[i] = len(table) - 1 - i // blocks out of order
					}
					opts := backend.Options{NumBlocks: len(table), BlockSize: bs, KV: kv}
					// Two tokens, then the rest at once: runs of four from position 2.
					whole := slidingLogits(t, m, opts, prompt, table, func(pos int) int {
						if pos == 0 {
							return 2
						}
						return n
					})
					thirds := slidingLogits(t, m, opts, prompt, table, func(int) int { return 3 })
					for i := range whole {
						if math.Float32bits(whole[i]) != math.Float32bits(thirds[i]) {
							t.Fatalf("logit %d: %v prefilled in two chunks, %v three tokens at a time", i, whole[i], thirds[i])
						}
					}
				})
			}
		}
		m.Close()
	}
}

// slidingLogits feeds prompt to a new backend, chunk(pos) tokens from
// position pos on, and returns the last position's logits.
func slidingLogits(t *testing.T, m *model.Model, o backend.Options, prompt, table []int, chunk func(pos int) int) []float32 {
	t.Helper()
	b, err := New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var last []float32
	for pos := 0; pos < len(prompt); {
		end := min(pos+chunk(pos), len(prompt))
		out, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{{Tokens: prompt[pos:end], Pos: pos,
			Blocks: table, Logits: end == len(prompt), PromptLen: len(prompt)}}})
		if err != nil {
			t.Fatal(err)
		}
		last, pos = out[0], end
	}
	return last
}
