// Package backendtest is the suite every backend must pass, so that a
// second backend (CUDA, say) is held to the same contract as the CPU one:
// the greedy goldens (llama2.c's stories260K, exact), batch invariance
// (bit-identical logits alone and in any batch, any chunking), block
// isolation (a step writes only its sequences' blocks), and typed errors
// for bad batches. A backend's own test calls Run with its constructor.
package backendtest

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// Open starts the backend under test.
type Open func(m *model.Model, o backend.Options) (backend.Backend, error)

// Run runs the whole suite against open.
func Run(t *testing.T, open Open) {
	t.Run("goldens", func(t *testing.T) { goldens(t, open) })
	// Every format modelgen writes, each in its own synthesized model.
	for _, dt := range []quant.DType{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q4_0, quant.Q4_1, quant.Q5_0,
		quant.Q5_1, quant.Q2_K, quant.Q3_K, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ4_NL, quant.IQ4_XS} {
		t.Run("batch-invariance/"+dt.String(), func(t *testing.T) { batchInvariance(t, open, dt) })
	}
	// A mixture of experts: its token-expert pairs grouped by expert must
	// not make a token's result depend on who else is in the step.
	for _, dt := range []quant.DType{quant.F32, quant.Q8_0, quant.Q4_K} {
		t.Run("batch-invariance/moe/"+dt.String(), func(t *testing.T) {
			path, _ := synth.WriteFile(t, synth.TinyMoE(dt, 128, 12))
			m, err := model.Load(path, model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			BatchInvariance(t, open, m)
		})
	}
	for _, dt := range []quant.DType{quant.F32, quant.Q8_0, quant.Q4_K} {
		for _, qd := range []string{"float", "auto"} {
			t.Run("verify-rows/"+dt.String()+"/"+qd, func(t *testing.T) { verifyRows(t, open, dt, qd) })
		}
	}
	// K and V in block formats (a head of 64, so rotated as llama.cpp does).
	for _, kv := range []backend.KVTypes{backend.SameKV(quant.Q8_0), {K: quant.Q4_0, V: quant.Q8_0}, {K: quant.Q5_0, V: quant.IQ4_NL}} {
		t.Run("batch-invariance/kv/"+kv.String(), func(t *testing.T) { kvInvariance(t, open, kv) })
		t.Run("verify-rows/kv/"+kv.String(), func(t *testing.T) {
			verifyRowsOn(t, open, kvModel(t), backend.Options{NumBlocks: 16, BlockSize: 16, KV: kv, QuantDot: "auto"})
		})
	}
	t.Run("window-store", func(t *testing.T) { windowStore(t, open) })
	t.Run("block-isolation", func(t *testing.T) { blockIsolation(t, open) })
	t.Run("bad-batches", func(t *testing.T) { badBatches(t, open) })
}

func start(t *testing.T, open Open, m *model.Model, o backend.Options) backend.Backend {
	t.Helper()
	b, err := open(m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func synthModel(t *testing.T, dt quant.DType) *model.Model {
	t.Helper()
	path, _ := synth.WriteFile(t, synth.Tiny(dt, 128, 11))
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func forward(t *testing.T, b backend.Backend, seqs ...backend.SeqInput) [][]float32 {
	t.Helper()
	logits, err := b.Forward(&backend.Batch{Seqs: seqs})
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(logits)) // valid only until the next call
	for i, l := range logits {
		out[i] = slices.Clone(l)
	}
	return out
}

func goldens(t *testing.T, open Open) {
	gs := testmodels.Goldens(t)
	m, err := model.Load(testmodels.Path(t, "stories260K.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b := start(t, open, m, backend.Options{NumBlocks: 32, BlockSize: 16, KV: backend.SameKV(quant.F16)})
	blocks := make([]int, 32)
	for i := range blocks {
		blocks[i] = i
	}
	for _, g := range gs {
		// Teacher-forced: a near tie (K and V are half floats) may go either
		// way without derailing the rest (testmodels.Golden.Follow).
		pos := 0
		g.Follow(t, func(toks []int) []float32 {
			l := forward(t, b, backend.SeqInput{Tokens: toks, Pos: pos, Blocks: blocks, Logits: true})[0]
			pos += len(toks)
			return l
		}, func(tok int) bool { return m.IsStop(tok) || tok == m.Tokenizer.BOS }, testmodels.TieF16)
	}
}

// batchInvariance: a sequence's logits at every step are bit-identical
// whether it runs alone in one prefill, or chunked beside other sequences
// (a batch of 8 or more takes the tiled matmul path).
func batchInvariance(t *testing.T, open Open, dt quant.DType) {
	BatchInvariance(t, open, synthModel(t, dt))
}

// BatchInvariance checks batchInvariance's property on model m (for a
// backend's tests on real quantized files).
func BatchInvariance(t *testing.T, open Open, m *model.Model) {
	prompt := []int{1, 17, 42, 280, 5, 99, 33, 7, 250, 3}
	alone := start(t, open, m, backend.Options{NumBlocks: 64, BlockSize: 4, KV: backend.SameKV(quant.F16)})
	want := forward(t, alone, backend.SeqInput{Tokens: prompt, Blocks: []int{0, 1, 2}, Logits: true})[0]

	mixed := start(t, open, m, backend.Options{NumBlocks: 64, BlockSize: 4, KV: backend.SameKV(quant.F16)})
	var got []float32
	// The prompt in chunks of 3, beside 9 other sequences each step; blocks
	// placed elsewhere in the pool.
	table := []int{40, 7, 23}
	for pos := 0; pos < len(prompt); pos += 3 {
		end := min(pos+3, len(prompt))
		seqs := []backend.SeqInput{{Tokens: prompt[pos:end], Pos: pos, Blocks: table, Logits: end == len(prompt)}}
		for j := range 9 {
			seqs = append(seqs, backend.SeqInput{Tokens: []int{2 + j + pos}, Pos: pos, Blocks: []int{10 + 3*j, 11 + 3*j, 12 + 3*j},
				Logits: true})
		}
		logits := forward(t, mixed, seqs...)
		if end == len(prompt) {
			got = logits[0]
		}
	}
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("logit %d: alone %v, batched %v", i, want[i], got[i])
		}
	}
}

// kvModel is a model with heads of 64, which block formats fit (and which
// llama.cpp's rotation turns).
func kvModel(t *testing.T) *model.Model {
	path, _ := synth.WriteFile(t, synth.Options{Dim: 128, Layers: 2, Heads: 2, KVHeads: 1, FFN: 96, Vocab: 300,
		Context: 256, DType: quant.F32, Seed: 13})
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// kvInvariance: with K and V stored as kv, a sequence's logits over a
// 40-token prompt and four decode steps are bit-identical alone and
// chunked beside nine others, its blocks elsewhere in the pool.
func kvInvariance(t *testing.T, open Open, kv backend.KVTypes) {
	m := kvModel(t)
	toks := make([]int, 44)
	for i := range toks {
		toks[i] = 1 + (i*37)%299
	}
	const prompt = 40
	o := backend.Options{NumBlocks: 48, BlockSize: 16, KV: kv}
	alone := start(t, open, m, o)
	var want [][]float32
	for pos := prompt; pos <= len(toks); pos++ {
		from := pos - 1
		if pos == prompt {
			from = 0
		}
		want = append(want, forward(t, alone, backend.SeqInput{Tokens: toks[from:pos], Pos: from, Blocks: []int{0, 1, 2}, Logits: true})[0])
	}
	mixed := start(t, open, m, o)
	table := []int{30, 4, 17}
	var got [][]float32
	for pos := 0; pos < len(toks); {
		end := min(pos+7, prompt)
		if pos >= prompt {
			end = pos + 1
		}
		seqs := []backend.SeqInput{{Tokens: toks[pos:end], Pos: pos, Blocks: table, Logits: end >= prompt}}
		for j := range 9 {
			seqs = append(seqs, backend.SeqInput{Tokens: []int{2 + j + pos}, Pos: pos, Blocks: []int{5 + j, 14 - j%3, 20 + j}, Logits: true})
		}
		if l := forward(t, mixed, seqs...); end >= prompt {
			got = append(got, l[0])
		}
		pos = end
	}
	for s := range want {
		for i := range want[s] {
			if math.Float32bits(want[s][i]) != math.Float32bits(got[s][i]) {
				t.Fatalf("step %d logit %d: alone %v, batched %v", s, i, want[s][i], got[s][i])
			}
		}
	}
}

// verifyRows: one share of drafted tokens with Rows logits gives, row for
// row, the bits a plain decode of each token gives (what makes speculative
// verification exact), under either role of QuantDot.
func verifyRows(t *testing.T, open Open, dt quant.DType, quantDot string) {
	verifyRowsOn(t, open, synthModel(t, dt), backend.Options{NumBlocks: 16, BlockSize: 4, KV: backend.SameKV(quant.F16), QuantDot: quantDot})
}

// verifyRowsOn is verifyRows on model m with the backend options o.
func verifyRowsOn(t *testing.T, open Open, m *model.Model, o backend.Options) {
	toks := []int{1, 17, 42, 280, 5, 99, 33, 7, 250, 3}
	const promptLen = 6
	blocks := []int{3, 9, 1}
	plain := start(t, open, m, o)
	var want [][]float32
	forward(t, plain, backend.SeqInput{Tokens: toks[:promptLen-1], Blocks: blocks, PromptLen: promptLen})
	for pos := promptLen - 1; pos < len(toks); pos++ {
		want = append(want, forward(t, plain, backend.SeqInput{Tokens: toks[pos : pos+1], Pos: pos, Blocks: blocks,
			Logits: true, PromptLen: promptLen})[0])
	}
	spec := start(t, open, m, o)
	forward(t, spec, backend.SeqInput{Tokens: toks[:promptLen-1], Blocks: blocks, PromptLen: promptLen})
	rows := len(toks) - promptLen + 1
	got := forward(t, spec, backend.SeqInput{Tokens: toks[promptLen-1:], Pos: promptLen - 1, Blocks: blocks,
		Logits: true, Rows: rows, PromptLen: promptLen}, backend.SeqInput{Tokens: []int{4}, Blocks: []int{12}, Logits: true})[0]
	v := len(want[0])
	if len(got) != rows*v {
		t.Fatalf("%d logits for %d rows of %d", len(got), rows, v)
	}
	for r := range rows {
		for i := range v {
			if math.Float32bits(want[r][i]) != math.Float32bits(got[r*v+i]) {
				t.Fatalf("row %d logit %d: plain decode %v, verified %v", r, i, want[r][i], got[r*v+i])
			}
		}
	}
}

// blockIsolation: running another sequence in other blocks between two
// steps of a sequence does not change its next logits.
func blockIsolation(t *testing.T, open Open) {
	m := synthModel(t, quant.F32)
	step := func(b backend.Backend, interfere bool) []float32 {
		forward(t, b, backend.SeqInput{Tokens: []int{1, 5, 9, 13}, Blocks: []int{3, 4}})
		if interfere {
			forward(t, b, backend.SeqInput{Tokens: []int{1, 200, 201, 202, 203, 204}, Blocks: []int{0, 1, 2, 5}})
		}
		return forward(t, b, backend.SeqInput{Tokens: []int{21}, Pos: 4, Blocks: []int{3, 4}, Logits: true})[0]
	}
	a := step(start(t, open, m, backend.Options{NumBlocks: 8, BlockSize: 4}), false)
	b := step(start(t, open, m, backend.Options{NumBlocks: 8, BlockSize: 4}), true)
	if !slices.Equal(a, b) {
		t.Fatal("another sequence's step changed this one's logits")
	}
}

// windowStore: a windowed model's (gpt-oss's: windows of 128 on even
// layers) logits over a 200-token prompt in chunks of 24 and eight decode
// steps are bit-identical whether a block holds every layer or one layer
// group (Options.Windowed), the sliding group's blocks given back as the
// queries move past them and taken again for new positions; and a share
// whose window table lacks a block its queries see is refused. K and V in
// F16, and K in Q8_0: heads of 64, so runs of four prompt tokens take the
// CPU's four-query kernels, which must not read the blocks given back.
func windowStore(t *testing.T, open Open) {
	for _, kv := range []backend.KVTypes{backend.SameKV(quant.F16), {K: quant.Q8_0, V: quant.F16}} {
		t.Run(kv.String(), func(t *testing.T) { windowStoreKV(t, open, kv) })
	}
}

func windowStoreKV(t *testing.T, open Open, kv backend.KVTypes) {
	path, _ := synth.WriteFile(t, synth.Options{Arch: "gpt-oss", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64,
		FFN: 64, Vocab: 300, Context: 512, DType: quant.F32, Seed: 21, Std: 0.08, Experts: 4, ExpertsUsed: 2, ExpertFFN: 32})
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const bs, win = 16, 128
	if lay := m.Config.Layout(true); m.Config.SlidingWindow != win || lay.Tables != 1 || lay.Slots != 1 {
		t.Fatalf("synth's gpt-oss: window %d, layout %+v", m.Config.SlidingWindow, lay)
	}
	all := start(t, open, m, backend.Options{NumBlocks: 13, BlockSize: bs, KV: kv})
	split := start(t, open, m, backend.Options{NumBlocks: 32, BlockSize: bs, Windowed: true, KV: kv})
	toks := make([]int, 208)
	for i := range toks {
		toks[i] = 1 + (i*37+i*i)%299
	}
	plain := make([]int, 13)
	for i := range plain {
		plain[i] = i
	}
	free := make([]int, 32) // split's blocks, main and window from one list (reversed: blocks elsewhere)
	for i := range free {
		free[i] = 31 - i
	}
	var main, window []int
	for pos := 0; pos < len(toks); {
		n := 24
		if pos >= 200 {
			n = 1
		}
		end := min(pos+n, len(toks))
		for len(main)*bs < end {
			main, window = append(main, free[0]), append(window, free[1])
			free = free[2:]
		}
		first := max(0, pos-win+1) / bs
		for i := range first {
			if window[i] >= 0 {
				free = append(free, window[i])
				window[i] = -1
			}
		}
		want := forward(t, all, backend.SeqInput{Tokens: toks[pos:end], Pos: pos, Blocks: plain, Logits: true})[0]
		in := backend.SeqInput{Tokens: toks[pos:end], Pos: pos, Blocks: main, Window: [][]int{window}, Logits: true}
		got := forward(t, split, in)[0]
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("position %d logit %d: %v with every layer in a block, %v in window groups", end-1, i, want[i], got[i])
			}
		}
		if first > 0 { // a block the first query sees, gone
			bad := in
			bad.Window = [][]int{slices.Clone(window)}
			bad.Window[0][first] = -1
			if _, err := split.Forward(&backend.Batch{Seqs: []backend.SeqInput{bad}}); !errors.Is(err, backend.ErrBadBatch) {
				t.Fatalf("a window table without block %d (seen from %d): %v, want ErrBadBatch", first, pos, err)
			}
		}
		pos = end
	}
	if len(free) < 10 { // 13 main blocks and the last window's 8 held: 11; without reuse 6
		t.Fatalf("the window blocks were not reused: %d free of 32", len(free))
	}
}

func badBatches(t *testing.T, open Open) {
	m := synthModel(t, quant.F32)
	b := start(t, open, m, backend.Options{NumBlocks: 4, BlockSize: 4})
	for name, in := range map[string]backend.SeqInput{
		"token past the vocab":  {Tokens: []int{300}, Blocks: []int{0}},
		"negative token":        {Tokens: []int{-1}, Blocks: []int{0}},
		"block out of range":    {Tokens: []int{1}, Blocks: []int{4}},
		"table too short":       {Tokens: []int{1, 2, 3, 4, 5}, Blocks: []int{0}},
		"position past context": {Tokens: []int{1}, Pos: 128, Blocks: []int{0, 1, 2, 3}},
	} {
		if _, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{in}}); !errors.Is(err, backend.ErrBadBatch) {
			t.Errorf("%s: %v, want ErrBadBatch", name, err)
		}
	}
}
