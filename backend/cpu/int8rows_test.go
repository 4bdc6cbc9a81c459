package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestRowKernelsMatchGo: the sixteen-row VNNI kernels (the 32-value
// formats, and IQ4_XS and the K-quants against q8_K activations; Q4_K's,
// Q5_K's and Q6_K's row-major ones at one and two tokens, over odd and even
// counts of super-blocks) give exactly their row-by-row Go loops' results, on random bytes
// (every nibble, fifth bit, grid index and byte value) and on quantized
// rows, over groups split between shares, rows past the last group and
// more tokens than a pass takes; and they stay within the activations'
// rounding of the float path.
func TestRowKernelsMatchGo(t *testing.T) {
	if !haveVNNI {
		t.Skip("no AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	halves := map[quant.DType][]int{quant.Q4_0: {0}, quant.Q8_0: {0}, quant.Q4_1: {0, 2}, quant.Q5_0: {0}, quant.Q5_1: {0, 2}, quant.IQ4_NL: {0},
		quant.MXFP4: nil, quant.IQ4_XS: {0}, quant.Q4_K: {0, 2}, quant.Q5_K: {0, 2}, quant.Q6_K: {208}, quant.Q3_K: {108}, quant.Q2_K: {80, 82}}
	simd, _ := chooseKernels("")
	for dt := range halves {
		shapes := []struct{ rows, n, mid, cols int }{{16, 1, 16, 32}, {40, 7, 19, 256}, {35, 1, 16, 288}, {48, 70, 21, 96}}
		if int8Kind(dt) == actQ8_K {
			shapes = []struct{ rows, n, mid, cols int }{{16, 1, 16, 256}, {40, 7, 19, 512}, {35, 1, 16, 768}, {48, 70, 21, 256}, {40, 1, 19, 512}, {51, 1, 25, 1280}, {40, 2, 19, 512}, {51, 2, 25, 1280}, {35, 3, 16, 768}}
		}
		for _, sh := range shapes {
			for _, random := range []bool{true, false} {
				rows, n, cols := sh.rows, sh.n, sh.cols
				wb := synth.RandomMatrix(rng, dt, rows, cols, 0.5)
				if random {
					scrambleBlocks(rng, wb, dt, halves[dt])
				}
				w, err := model.NewMatrix(dt, rows, cols, wb)
				if err != nil {
					t.Fatal(err)
				}
				x := randVec(rng, n*cols)
				var a acts
				a.need(x, n, w, int8Kind(dt))
				got := make([]float32, n*rows)
				scratch := make([]float32, scratchLen(cols))
				simd.matmulInt8(got, &a, n, w, 0, sh.mid, scratch)
				simd.matmulInt8(got, &a, n, w, sh.mid, rows, scratch)
				rb, nb := w.Type.RowBytes(cols), cols/32
				row := make([]float32, cols)
				for i := range got {
					tok, r := i/rows, i%rows
					want := rowTail(w.Data[r*rb:(r+1)*rb], &a, tok, dt, cols)
					if math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Fatalf("%s %d rows, %d tokens, random %v: row %d token %d: kernel %v, Go %v", dt, rows, n, random, r, tok, got[i], want)
					}
					w.Row(r, row)
					if int8Kind(dt) == actQ8_K {
						checkRounding(t, got[i], row, x[tok*cols:(tok+1)*cols], a.q8k.d[tok*cols/256:], 256)
					} else {
						checkRounding(t, got[i], row, x[tok*cols:(tok+1)*cols], a.q8.d[tok*nb:], 32)
					}
				}
			}
		}
	}
}

// scrambleBlocks overwrites wb, blocks of dt, with random bytes, then puts
// a small finite fp16 scale at each offset of halves in every block (random
// bytes there could be NaN or Inf, which a test would only compare as
// bits); MXFP4's E8M0 scales range from the subnormal 0 and 1 to 2^12.
func scrambleBlocks(rng *rand.Rand, wb []byte, dt quant.DType, halves []int) {
	f := quant.Lookup(dt)
	for i := range wb {
		wb[i] = byte(rng.Uint32())
	}
	for b := range len(wb) / f.BlockBytes {
		for _, o := range halves {
			h := quant.F32ToF16(rng.Float32()*0.02 - 0.01)
			wb[b*f.BlockBytes+o], wb[b*f.BlockBytes+o+1] = byte(h), byte(h>>8)
		}
		if dt == quant.MXFP4 {
			wb[b*f.BlockBytes] = []byte{0, 1, 2, 3, 100, 115, 120, 125, 127, 128, 131, 140}[rng.IntN(12)]
		}
	}
}

// TestGroupChunksInvisible: a prompt's matmuls give the same logits
// whatever size of chunk their groups are swept in (one group, three,
// all): over four passes of tokens (three of 32 on AMX, 4 on the VNNI
// kernels, so Q4_0's and IQ4_NL's expanded copies serve three passes and
// the nibbles the last), with three threads, whose shares split groups;
// on the AVX2 families' eight-row kernels too (two passes, 64 and 36).
func TestGroupChunksInvisible(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2: only the Go loops run")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	prompt := make([]int, 100)
	for i := range prompt {
		prompt[i] = 1 + rng.IntN(299)
	}
	families := []string{"avx2"}
	if haveAVXVNNI {
		families = append(families, "avxvnni")
	}
	if haveVNNI {
		families = append(families, "avx512")
	}
	if haveAMX {
		families = append(families, "amx")
	}
	defer func(c, c8 int) { groupChunk, rows8Chunk = c, c8 }(groupChunk, rows8Chunk)
	for _, dt := range []quant.DType{quant.Q8_0, quant.Q4_0, quant.IQ4_NL, quant.IQ4_XS, quant.Q4_K, quant.Q6_K} {
		path, _ := synth.WriteFile(t, synth.Options{Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 300,
			Context: 256, DType: dt, Seed: 9})
		for _, fam := range families {
			// A model per family: each packs its weights its own way.
			m, err := model.Load(path, model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			run := func(chunk int) []float32 {
				groupChunk, rows8Chunk = chunk, chunk
				b, err := New(m, backend.Options{NumBlocks: 16, BlockSize: 16, KV: backend.SameKV(quant.F16),
					QuantDot: "int8", Kernels: fam, Threads: 3})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				logits, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{{Tokens: prompt, Blocks: []int{0, 1, 2, 3, 4, 5, 6}, Logits: true}}})
				if err != nil {
					t.Fatal(err)
				}
				return logits[0]
			}
			want := run(1 << 30)
			for _, chunk := range []int{1, 3 * 16 * 300, 3 * 16384} {
				got := run(chunk)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s, %s, chunks of %d bytes: logit %d: %v, want %v", dt, fam, chunk, i, got[i], want[i])
					}
				}
			}
			_ = m.Close()
		}
	}
}
