package cpu

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/testing/testmodels"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestQ8Quantize: activation blocks quantize as ggml's quantize_row_q8_0
// (AVX2 build): fp16 scale amax/127, values rounded half to even, and a
// zero block stays zero.
func TestQ8Quantize(t *testing.T) {
	x := make([]float32, 64)
	for i := range 32 {
		x[i] = float32(i-16) / 4 // amax 4: id 127/4 = 31.75
	}
	var a q8Acts
	a.quantize(x, 1, 64)
	if a.d[0] != quant.F16ToF32(quant.F32ToF16(4.0/127)) || a.d[1] != 0 {
		t.Fatalf("scales %v", a.d)
	}
	for i := range 32 {
		want := int8(math.RoundToEven(float64(x[i] * (127 / float32(4)))))
		if a.qs[i] != want || a.qs[32+i] != 0 {
			t.Fatalf("value %d: %d, want %d", i, a.qs[i], want)
		}
	}
	if a.qs[0] != -127 || a.qs[2] != -111 { // -4*31.75; -3.5*31.75 = -111.125
		t.Fatalf("qs %v", a.qs[:4])
	}
}

// TestQ8QuantizeSIMDMatchesGo: the AVX2 quantizer gives the Go loop's
// bytes, scales and sums, on blocks that reach every rounding case: ties
// (x*id exactly k+0.5), scales that fall to fp16 subnormals or to zero,
// huge, infinite and NaN values, negative zeros and zero blocks.
func TestQ8QuantizeSIMDMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(8, 0))
	const nb = 4000
	x := make([]float32, nb*32)
	for b := range nb {
		v := x[b*32 : (b+1)*32]
		scale := float32(math.Ldexp(1, rng.IntN(280)-140))
		for i := range v {
			v[i] = (rng.Float32()*2 - 1) * scale
		}
		switch b % 8 {
		case 1: // ties: amax 127 gives id 1, and halves round to even
			for i := range v {
				v[i] = float32(rng.IntN(254)-127) + 0.5
			}
			v[0] = 127
		case 2:
			clear(v)
			v[3] = float32(math.Copysign(0, -1))
		case 3:
			v[rng.IntN(32)] = float32(math.Inf(1 - 2*rng.IntN(2)))
		case 4:
			v[rng.IntN(32)] = float32(math.NaN())
		case 5:
			v[rng.IntN(32)] = math.MaxFloat32
		case 6: // amax/127 below fp16's smallest subnormal, or at it
			for i := range v {
				v[i] = float32(math.Ldexp(float64(rng.Float32()), -17-rng.IntN(12)))
			}
		}
	}
	var got q8Acts
	got.quantize(x, nb, 32)
	want := q8Acts{cols: 32, qs: make([]int8, nb*32), d: make([]float32, nb), sums: make([]int32, nb*8), nsum: make([]int32, nb)}
	quantizeQ80Go(&want, x)
	for b := range nb {
		same := math.Float32bits(got.d[b]) == math.Float32bits(want.d[b]) ||
			math.IsNaN(float64(got.d[b])) && math.IsNaN(float64(want.d[b]))
		if !same || got.nsum[b] != want.nsum[b] ||
			!slices.Equal(got.qs[b*32:(b+1)*32], want.qs[b*32:(b+1)*32]) ||
			!slices.Equal(got.sums[b*8:(b+1)*8], want.sums[b*8:(b+1)*8]) {
			t.Fatalf("block %d (%v): d %g nsum %d qs %v sums %v; Go: d %g nsum %d qs %v sums %v", b, x[b*32:(b+1)*32],
				got.d[b], got.nsum[b], got.qs[b*32:(b+1)*32], got.sums[b*8:(b+1)*8],
				want.d[b], want.nsum[b], want.qs[b*32:(b+1)*32], want.sums[b*8:(b+1)*8])
		}
	}
}

// TestQ8KQuantizeSIMDMatchesGo: as TestQ8QuantizeSIMDMatchesGo for the
// super-block activations: the first value of the largest magnitude sets
// the scale (a tie of +m and -m takes the first), NaNs are skipped, and a
// value that rounds to 128 is held at 127.
func TestQ8KQuantizeSIMDMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(8, 1))
	const nb = 1500
	x := make([]float32, nb*qkK)
	for b := range nb {
		v := x[b*qkK : (b+1)*qkK]
		scale := float32(math.Ldexp(1, rng.IntN(280)-140))
		for i := range v {
			v[i] = (rng.Float32()*2 - 1) * scale
		}
		i, j := rng.IntN(qkK), rng.IntN(qkK)
		switch b % 8 {
		case 1: // +m and -m both largest
			v[i], v[j] = 2*scale, -2*scale
		case 2:
			clear(v)
			v[5] = float32(math.Copysign(0, -1))
		case 3:
			v[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
		case 4:
			v[i] = float32(math.NaN())
		case 5: // NaNs only: no largest
			for k := range v {
				v[k] = float32(math.NaN())
			}
		case 6: // ties: -127/max is 1, halves round to even
			for k := range v {
				v[k] = float32(rng.IntN(254)-127) + 0.5
			}
			v[i] = -127
		}
	}
	var got q8KActs
	got.quantize(x, nb, qkK)
	want := q8KActs{cols: qkK, qs: make([]int8, nb*qkK), d: make([]float32, nb), bs: make([]int16, nb*16), nsum: make([]int32, nb*8)}
	quantizeQ8KGo(&want, x)
	for b := range nb {
		same := math.Float32bits(got.d[b]) == math.Float32bits(want.d[b]) ||
			math.IsNaN(float64(got.d[b])) && math.IsNaN(float64(want.d[b]))
		if !same || !slices.Equal(got.qs[b*qkK:(b+1)*qkK], want.qs[b*qkK:(b+1)*qkK]) ||
			!slices.Equal(got.bs[b*16:(b+1)*16], want.bs[b*16:(b+1)*16]) || !slices.Equal(got.nsum[b*8:(b+1)*8], want.nsum[b*8:(b+1)*8]) {
			t.Fatalf("block %d: d %g bs %v nsum %v; Go: d %g bs %v nsum %v", b, got.d[b], got.bs[b*16:(b+1)*16], got.nsum[b*8:(b+1)*8],
				want.d[b], want.bs[b*16:(b+1)*16], want.nsum[b*8:(b+1)*8])
		}
	}
}

// TestInt8KernelsMatchGo: the Q4_0 and Q8_0 int8 kernels (AVX2's, and
// VNNI's for one token and four) give exactly the Go loops' sums, and those
// differ from the float path's by no more than the activations' rounding
// allows (half a step per element). Q8_0's rows include every byte value.
// The Go loops compute row by row and token by token, so a match also says
// a result does not depend on the rows or tokens that shared its pass.
func TestInt8KernelsMatchGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Rows in fours and not, batch 1 (four-row kernel only) and leftovers
	// after groups of four tokens, an odd block count, and a split of the
	// rows between shares.
	for _, sh := range []struct {
		dt                 quant.DType
		rows, n, mid, cols int
	}{
		{quant.Q4_0, 8, 7, 8, 256}, {quant.Q4_0, 11, 1, 3, 288}, {quant.Q4_0, 11, 6, 5, 288}, {quant.Q4_0, 13, 1, 13, 32}, {quant.Q4_0, 5, 5, 2, 96},
		{quant.Q8_0, 8, 7, 8, 256}, {quant.Q8_0, 11, 1, 3, 288}, {quant.Q8_0, 13, 1, 13, 32}, {quant.Q8_0, 5, 5, 2, 96},
		// The row kernels (Q8_0; Q4_0 on VNNI): groups of sixteen split
		// between shares, rows past the last group, and more tokens than
		// one pass takes.
		{quant.Q8_0, 40, 7, 19, 256}, {quant.Q8_0, 35, 1, 16, 288}, {quant.Q8_0, 48, 70, 21, 96}, {quant.Q8_0, 32, 3, 0, 32},
		{quant.Q4_0, 40, 7, 19, 256}, {quant.Q4_0, 35, 1, 16, 288}, {quant.Q4_0, 48, 70, 21, 96}, {quant.Q4_0, 32, 3, 0, 32},
	} {
		cols := sh.cols
		rows, n := sh.rows, sh.n
		wb := synth.RandomMatrix(rng, sh.dt, rows, cols, 0.5)
		if sh.dt == quant.Q8_0 && rows*cols >= 256 {
			for v := range 256 { // -128 (never quantize_row_q8_0's) to 127
				wb[(v/32)*34+2+v%32] = byte(v)
			}
		}
		w, err := model.NewMatrix(sh.dt, rows, cols, wb)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var a acts
		a.need(x, n, w, int8Kind(w.Type))
		gok, _ := chooseKernels("go")
		want := make([]float32, n*rows)
		scratch := make([]float32, scratchLen(cols))
		gok.matmulInt8(want, &a, n, w, 0, rows, scratch)
		// AVX2's kernel, and the VNNI ones where the CPU has them.
		sets := []string{"avx2"}
		if haveVNNI {
			sets = append(sets, "")
		}
		// VNNI runs Q4_0 and Q8_0 in row lanes: rows32Go, row by row,
		// defines it (without VNNI, element lanes: lanes32Go).
		rowWant := make([]float32, n*rows)
		rb := w.Type.RowBytes(cols)
		desc := map[quant.DType]*block32{quant.Q4_0: &q40Row, quant.Q8_0: &q80Row}[sh.dt]
		for i := range rowWant {
			tok, r := i/rows, i%rows
			rowWant[i] = rows32Go(w.Data[r*rb:(r+1)*rb], a.q8.qs[tok*cols:(tok+1)*cols], a.q8.d[tok*cols/32:(tok+1)*cols/32], cols/32, desc)
		}
		got := make([]float32, n*rows)
		for _, set := range sets {
			simd, _ := chooseKernels(set)
			simd.matmulInt8(got, &a, n, w, 0, sh.mid, scratch)
			simd.matmulInt8(got, &a, n, w, sh.mid, rows, scratch)
			want := want
			if set == "" {
				want = rowWant
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s, kernels %q, %d rows, %d tokens: out %d: SIMD %v, Go %v", sh.dt, set, rows, n, i, got[i], want[i])
				}
			}
		}
		for i := range got {
			tok, r := i/rows, i%rows
			row := make([]float32, cols)
			w.Row(r, row)
			checkRounding(t, got[i], row, x[tok*cols:(tok+1)*cols], a.q8.d[tok*cols/32:], 32)
		}
	}
}

// checkRounding fails unless got, an int8-path dot of row and x, is within
// half an activation step per element (step: the block scales d, one per
// block values) of the float64 dot.
func checkRounding(t *testing.T, got float32, row, x, d []float32, block int) {
	t.Helper()
	var ref, bound float64
	for j, v := range row {
		ref += float64(v) * float64(x[j])
		bound += math.Abs(float64(v)) * math.Abs(float64(d[j/block])) / 2
	}
	if diff := math.Abs(float64(got) - ref); diff > bound*1.01+1e-4 {
		t.Fatalf("int8 %v, float %v: off by %.3g, bound %.3g", got, ref, diff, bound)
	}
}

// TestInt8StaysNearTheReference: on llama.cpp's quantized files whose
// formats the int8 path covers, its log-probabilities, with llama.cpp's
// tokens fed back (teacher forcing), stay within 0.05 of llama.cpp's on the
// dequantized twin: the rounding of 8-bit activations, nothing worse. On
// this CPU's best kernels, and on the avxvnni family's where it has
// AVX-VNNI (Alder Lake's row kernels: Q8_0's and IQ4_XS's are its own),
// and on plain AVX2's (a Zen 3's, whose Q8_0 is packed without its bias).
func TestInt8StaysNearTheReference(t *testing.T) {
	families := []string{""}
	for _, k := range []string{"avxvnni", "avx2"} {
		if _, err := chooseKernels(k); err == nil {
			families = append(families, k)
		}
	}
	for _, k := range families {
		t.Run("kernels="+k, func(t *testing.T) { int8NearReference(t, k) })
	}
}

func int8NearReference(t *testing.T, kernels string) {
	dir := filepath.Join(testmodels.Dir(t), "quant")
	for _, name := range []string{"Q4_0", "Q4_K_M", "Q4_K_M-mix", "Q5_K_M", "Q6_K", "IQ4_XS", "Q3_K_M", "Q2_K", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "Q8_0"} {
		b, err := os.ReadFile(filepath.Join(dir, "tiny-quant-"+name+".dequant-f32.golden.json"))
		if err != nil {
			t.Skip("no models/quant goldens")
		}
		var goldens []testmodels.ArchGolden
		if err := json.Unmarshal(b, &goldens); err != nil {
			t.Fatal(err)
		}
		m, err := model.Load(filepath.Join(dir, "tiny-quant-"+name+".gguf"), model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		be, err := New(m, backend.Options{NumBlocks: 16, BlockSize: 16, KV: backend.SameKV(quant.F32), QuantDot: "int8", Kernels: kernels})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, g := range goldens {
			worst = max(worst, teacherForced(t, be, g))
		}
		be.Close()
		m.Close()
		t.Logf("%s: largest top-5 log-probability difference from the float reference %.3g", name, worst)
		if worst > 0.05 {
			t.Errorf("%s: int8 drifts %.3g from the reference", name, worst)
		}
	}
}

// TestAutoRunsOnlyNativeInt8Kernels: under QuantDot "auto", a format takes
// the int8 path only where its kernels run natively: none with the Go
// loops, the AVX2 ones without VNNI (MXFP4 stays float), all with VNNI,
// where prompt tokens take it too; without VNNI prompt tokens take it for
// the formats with row kernels only (Q4_0, Q4_K, Q5_K, Q6_K, Q8_0, IQ4_XS).
// Explicit "int8" takes it everywhere.
func TestAutoRunsOnlyNativeInt8Kernels(t *testing.T) {
	path, _ := synth.WriteFile(t, synth.Tiny(quant.Q4_K, 64, 3))
	m, err := model.Load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, k := range []string{"go", "avx2", "avxvnni", ""} {
		if _, err := chooseKernels(k); err != nil {
			continue
		}
		for _, qd := range []string{"auto", "int8"} {
			b, err := New(m, backend.Options{NumBlocks: 8, BlockSize: 16, KV: backend.SameKV(quant.F16), QuantDot: qd, Kernels: k})
			if err != nil {
				t.Fatal(err)
			}
			// With VNNI, "auto" runs prompts as int8 too: no split by role.
			if got, want := b.ByRole(), qd == "auto" && !b.kern.vnni; got != want {
				t.Errorf("kernels %q, %s: by role %v, want %v", k, qd, got, want)
			}
			for _, dt := range []quant.DType{quant.Q4_0, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.IQ4_XS, quant.Q5_0, quant.Q8_0} {
				native := b.kern.simd && (b.kern.vnni || !needsVNNI(dt))
				if got, want := b.kern.form(dt, false) != actNone, qd == "int8" || native; got != want {
					t.Errorf("kernels %q, %s, %s: int8 path %v, want %v", k, qd, dt, got, want)
				}
				// Prompt tokens: all of them with VNNI or under "int8",
				// else those with AVX2 row kernels only.
				prompt := qd == "int8" || native && (b.kern.vnni || dt == quant.Q4_0 || dt == quant.Q4_K || dt == quant.Q5_K || dt == quant.Q6_K || dt == quant.Q8_0 ||
					dt == quant.IQ4_XS)
				if got := b.kern.form(dt, true) != actNone; got != prompt {
					t.Errorf("kernels %q, %s, %s: prompt int8 path %v, want %v", k, qd, dt, got, prompt)
				}
			}
			b.Close()
		}
	}
}

// TestAVX2Int8KernelsMatchGo: the AVX2 int8 kernels (one token and four,
// Q4_K's all tokens at once;
// with VNNI the 32-value formats take the row kernels, TestRowKernelsMatchGo)
// give exactly their Go loops' sums, on random bytes (every level, scale,
// fifth bit, high bit and sign) and on quantized rows, rows longer than
// 64 super-blocks included, and stay within the activations' rounding.
func TestAVX2Int8KernelsMatchGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	// Where each format keeps its fp16 scales (random bytes there could be
	// NaN), and the row widths tried.
	cases := []struct {
		dt     quant.DType
		halves []int
		cols   []int
	}{
		{quant.IQ4_XS, []int{0}, []int{256, 768, 256 * 67}}, {quant.Q3_K, []int{108}, []int{256, 768, 256 * 67}},
		{quant.Q2_K, []int{80, 82}, []int{256, 768, 256 * 67}}, {quant.Q4_1, []int{0, 2}, []int{320}},
		{quant.Q5_0, []int{0}, []int{320}}, {quant.Q5_1, []int{0, 2}, []int{320}}, {quant.IQ4_NL, []int{0}, []int{320}},
		{quant.Q8_0, []int{0}, []int{320, 4096}},
	}
	simd, _ := chooseKernels("avx2")
	gok, _ := chooseKernels("go")
	for _, c := range cases {
		f := quant.Lookup(c.dt)
		for _, cols := range c.cols {
			for _, tc := range []struct {
				random bool
				n      int
			}{{true, 7}, {false, 7}, {true, 1}, {false, 1}} {
				// Seven tokens: a group of four, then three one by one; one
				// token: batch 1, over a split of the rows.
				const rows = 3
				random, n := tc.random, tc.n
				wb := synth.RandomMatrix(rng, c.dt, rows, cols, 0.5)
				if random {
					for i := range wb {
						wb[i] = byte(rng.Uint32())
					}
					for b := range rows * cols / f.BlockElems {
						for _, o := range c.halves {
							h := quant.F32ToF16(rng.Float32() * 0.01)
							wb[b*f.BlockBytes+o], wb[b*f.BlockBytes+o+1] = byte(h), byte(h>>8)
						}
					}
				}
				w, err := model.NewMatrix(c.dt, rows, cols, wb)
				if err != nil {
					t.Fatal(err)
				}
				x := randVec(rng, n*cols)
				var a acts
				a.need(x, n, w, int8Kind(w.Type))
				got, want := make([]float32, n*rows), make([]float32, n*rows)
				scratch := make([]float32, scratchLen(cols))
				simd.matmulInt8(got, &a, n, w, 0, 1, scratch)
				simd.matmulInt8(got, &a, n, w, 1, rows, scratch)
				gok.matmulInt8(want, &a, n, w, 0, rows, scratch)
				d, block := a.q8k.d, 256
				if int8Kind(c.dt) == actQ8_0 {
					d, block = a.q8.d, 32
				}
				row := make([]float32, cols)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s cols %d random %v: out %d: AVX2 %v, Go %v", c.dt, cols, random, i, got[i], want[i])
					}
					tok, r := i/rows, i%rows
					w.Row(r, row)
					checkRounding(t, got[i], row, x[tok*cols:(tok+1)*cols], d[tok*cols/block:], block)
				}
			}
		}
	}
}
