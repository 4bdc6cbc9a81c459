package cpu

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func randMatrix(t *testing.T, rng *rand.Rand, typ quant.DType, rows, cols int) *model.Matrix {
	t.Helper()
	m, err := model.NewMatrix(typ, rows, cols, synth.RandomMatrix(rng, typ, rows, cols, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// pureGo is the kernel set without assembly, the reference the SIMD ones must match.
var pureGo = &kernels{simd: false}

// withSIMD runs f on kv with the assembly kernels on or off.
func withSIMD(kv *kvLayer, on bool, f func()) {
	saved := kv.kern
	kv.kern = pureGo
	if on {
		kv.kern, _ = chooseKernels("")
	}
	defer func() { kv.kern = saved }()
	f()
}

// heapKV is a store of n elements of t on the Go heap, blocks of rows.
func heapKV(t quant.DType, n, rows int, kern *kernels) kvLayer {
	mem := make([]byte, t.RowBytes(n)+64)
	return newKVLayer(t, unsafe.Pointer(&mem[0]), n, rows, kern)
}

func relErr(got, want float32) float64 {
	return math.Abs(float64(got)-float64(want)) / math.Max(1, math.Abs(float64(want)))
}

// TestSIMDMatchesPureGo checks every assembly kernel against the pure-Go path
// on random shapes, odd sizes and tails included. Tolerances are relative:
// the paths differ only in summation order (1e-5); Q8_0 rows dequantize
// exactly on both.
func TestSIMDMatchesPureGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2/FMA/F16C on this CPU: only the pure-Go kernels run")
	}
	families := []floatKernels{avx2Float}
	if haveAVX512 {
		families = append(families, avx512Float)
	}
	for _, fam := range families {
		k, err := chooseKernels(fam.name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fam.name, func(t *testing.T) { testSIMDFamily(t, k) })
	}
}

func testSIMDFamily(t *testing.T, k *kernels) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []quant.DType{quant.F32, quant.F16, quant.Q8_0, quant.BF16} {
		for range 40 {
			cols := 1 + rng.IntN(300)
			if rng.IntN(2) == 0 { // whole chunks: the tiled paths
				cols = 16 * (1 + rng.IntN(12))
			}
			if typ == quant.Q8_0 {
				cols = quant.Q8Block * (1 + rng.IntN(12))
			}
			rows, n := 1+rng.IntN(40), 1+rng.IntN(30)
			w := randMatrix(t, rng, typ, rows, cols)
			x := randVec(rng, n*cols)
			scratch := make([]float32, scratchLen(cols))
			want, got := make([]float32, n*rows), make([]float32, n*rows)
			matmulRows(want, x, n, w, 0, rows, scratch)
			k.matmulRowsFast(got, x, n, w, 0, rows, scratch)
			for i := range want {
				if e := relErr(got[i], want[i]); e > 1e-5 {
					t.Fatalf("%s %dx%d, %d tokens: element %d = %v, want %v", typ, rows, cols, n, i, got[i], want[i])
				}
			}
			// Every token's row is bit-identical alone and in the batch,
			// and a split of the rows (the pool's shares) changes nothing.
			alone := make([]float32, rows)
			for tok := range n {
				mid := rng.IntN(rows + 1)
				k.matmulRowsFast(alone, x[tok*cols:], 1, w, 0, mid, scratch)
				k.matmulRowsFast(alone, x[tok*cols:], 1, w, mid, rows, scratch)
				for r := range rows {
					if alone[r] != got[tok*rows+r] {
						t.Fatalf("%s %dx%d: token %d alone %v, in a batch of %d %v", typ, rows, cols, tok, alone[r], n, got[tok*rows+r])
					}
				}
			}
		}
	}
	// Each tile kernel's pairs are dot1's, bit for bit.
	if f := k.f; f.d6F32 != nil {
		tr := f.d6Rows
		cols := 16 * (1 + rng.IntN(40))
		w, x := randVec(rng, tr*cols), randVec(rng, 6*cols)
		res := make([]float32, 24)
		f.d6F32(&w[0], cols, &x[0], cols, cols, &res[0])
		for tk := range 6 {
			for r := range tr {
				if want := f.d1F32(&w[r*cols], &x[tk*cols], cols); math.Float32bits(res[tr*tk+r]) != math.Float32bits(want) {
					t.Fatalf("d6 row %d token %d: %v, dot1 %v", r, tk, res[tr*tk+r], want)
				}
			}
		}
	}
	for range 50 {
		n := 1 + rng.IntN(200)
		a, b := randVec(rng, n), randVec(rng, n)
		var want, got float32
		want, got = pureGo.vdot(a, b), k.vdot(a, b)
		if relErr(got, want) > 1e-5 {
			t.Fatalf("dot n=%d: %v, want %v", n, got, want)
		}
	}
}

// TestAttentionBlockKernels checks the per-block attention kernels against
// the pure-Go path for both KV types: every head size the SIMD path takes
// (and one it leaves to Go), block fills of 1 to 17 positions, and strides
// past the head.
func TestAttentionBlockKernels(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []quant.DType{quant.F32, quant.F16} {
		for _, hd := range []int{8, 12, 48, 64, 72, 128, 136} {
			for n := 1; n <= 17; n++ {
				stride := hd + 8*rng.IntN(3)
				off := rng.IntN(3)
				kv := heapKV(typ, off+n*stride, 1, pureGo)
				withSIMD(&kv, rng.IntN(2) == 0, func() { kv.put(0, randVec(rng, off+n*stride)) })
				q := randVec(rng, hd)
				want, got := make([]float32, n), make([]float32, n)
				withSIMD(&kv, false, func() { kv.dots(q, nil, off, stride, n, want) })
				withSIMD(&kv, true, func() { kv.dots(q, nil, off, stride, n, got) })
				for j := range want {
					if relErr(got[j], want[j]) > 1e-5 {
						t.Fatalf("%v dots hd=%d n=%d [%d]: %v, want %v", typ, hd, n, j, got[j], want[j])
					}
				}
				p := randVec(rng, n)
				acc1 := randVec(rng, hd)
				acc2 := append([]float32(nil), acc1...)
				withSIMD(&kv, false, func() { kv.accum(p, off, stride, acc1, nil) })
				withSIMD(&kv, true, func() { kv.accum(p, off, stride, acc2, nil) })
				for i := range acc1 {
					if relErr(acc2[i], acc1[i]) > 1e-5 {
						t.Fatalf("%v accum hd=%d n=%d [%d]: %v, want %v", typ, hd, n, i, acc2[i], acc1[i])
					}
				}
			}
		}
	}
}

// TestExpSum: the SIMD softmax numerators match math.Exp to 2e-7 relative,
// down to the clamp, and their sum to 1e-5.
func TestExpSum(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 7, 8, 9, 64, 1000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*300 - 280) // exp arguments from -210 to about 15
		}
		x[0] = 90 // a large positive argument: exp(49)
		a, b := append([]float32(nil), x...), append([]float32(nil), x...)
		var sa, sb float32
		sa, sb = expSum(a, 20, 0.7, false), expSum(b, 20, 0.7, true)
		for i := range a {
			if d := math.Abs(float64(b[i]-a[i])) / math.Max(float64(a[i]), 1e-37); d > 2e-7 && a[i] > 1e-37 {
				t.Fatalf("n=%d exp(%g): %g, want %g", n, (x[i]-20)*0.7, b[i], a[i])
			}
		}
		if relErr(sb, sa) > 1e-5 {
			t.Fatalf("n=%d sum %g, want %g", n, sb, sa)
		}
	}
}

// TestSwiGLU: the SIMD gate matches silu(h)*h2 (and siluAVX2 silu(h)) to
// 1e-6 relative, over arguments that saturate both ways.
func TestSwiGLU(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	h := make([]float32, 1003)
	for i := range h {
		h[i] = float32(rng.NormFloat64() * 30)
	}
	h[0], h[1], h[2] = 200, -200, 0
	h2 := randVec(rng, len(h))
	got := append([]float32(nil), h...)
	swigluAVX2(&got[0], &h2[0], len(h)&^7, &expConsts[0][0])
	gate := append([]float32(nil), h...)
	siluAVX2(&gate[0], len(h)&^7, &expConsts[0][0])
	for i := range len(h) &^ 7 {
		want := silu(h[i]) * h2[i]
		if d := math.Abs(float64(got[i] - want)); d > 1e-6*math.Max(1, math.Abs(float64(want))) {
			t.Fatalf("swiglu(%g, %g) = %g, want %g", h[i], h2[i], got[i], want)
		}
		if d := math.Abs(float64(gate[i] - silu(h[i]))); d > 1e-6*math.Max(1, math.Abs(float64(silu(h[i])))) {
			t.Fatalf("silu(%g) = %g, want %g", h[i], gate[i], silu(h[i]))
		}
	}
}

// TestF16Store: the SIMD conversion rounds exactly as F32ToF16 does.
func TestF16Store(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	src := randVec(rng, 4099)
	for i := range src {
		src[i] *= float32(math.Pow(2, float64(rng.IntN(40)-20)))
	}
	src[0], src[1], src[2] = 65520, 1e-8, -6.1e-5 // overflow, underflow, subnormal
	simd, _ := chooseKernels("")
	a, b := heapKV(quant.F16, len(src), 1, pureGo), heapKV(quant.F16, len(src), 1, simd)
	a.put(0, src)
	b.put(0, src)
	for i := range src {
		if a.f16[i] != b.f16[i] {
			t.Fatalf("[%d] %g: simd %#04x, go %#04x", i, src[i], b.f16[i], a.f16[i])
		}
	}
}

// TestGoldensPureGo runs the goldens with the assembly kernels off, so that
// the pure-Go path stays tested on every CI run.
func TestGoldensPureGo(t *testing.T) {
	goldenGenerations(t, "go")
}

// TestAttentionFourQueryKernels: each family's four-query kernels give
// each query the one-query kernels' bits (scores and weighted sums), for
// any count of positions and head sizes of 64 and 128.
func TestAttentionFourQueryKernels(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this build")
	}
	families := map[string]*attn4Kernels{"avx2": avx2Attn4}
	if haveAVX512 {
		families["avx512"] = avx512Attn4
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for name, k4 := range families {
		for _, hd := range []int{64, 128} {
			for n := 1; n <= 19; n++ {
				stride := hd + 16*rng.IntN(3)
				k := make([]uint16, n*stride)
				for i := range k {
					k[i] = quant.F32ToF16(float32(rng.NormFloat64()))
				}
				qs, qstride, ostride := 4, hd+8, n+3
				q := randVec(rng, qs*qstride)
				got := make([]float32, 4*ostride)
				k4.dots(&q[0], qstride, &k[0], stride, hd, n, &got[0], ostride)
				p := randVec(rng, 4*ostride)
				out := randVec(rng, 4*qstride)
				want := append([]float32(nil), out...)
				k4.accum(&p[0], ostride, &k[0], stride, hd, n, &out[0], qstride)
				for i := range 4 {
					one := make([]float32, n)
					attnDotsF16AVX2(&q[i*qstride], &k[0], stride, hd, n, &one[0])
					for j := range n {
						if math.Float32bits(one[j]) != math.Float32bits(got[i*ostride+j]) {
							t.Fatalf("%s hd %d n %d: query %d position %d: %v, one-query kernel %v", name, hd, n, i, j, got[i*ostride+j], one[j])
						}
					}
					attnAccumF16AVX2(&p[i*ostride], &k[0], stride, hd, n, &want[i*qstride])
					for e := range hd {
						if math.Float32bits(want[i*qstride+e]) != math.Float32bits(out[i*qstride+e]) {
							t.Fatalf("%s hd %d n %d: query %d element %d: %v, one-query kernel %v", name, hd, n, i, e, out[i*qstride+e], want[i*qstride+e])
						}
					}
				}
			}
		}
	}
}

// TestAVX2FamilyRunsNoAVX512: the "avx2" family, which benchmarks and tests
// use to run a Zen 3's path on an AVX-512 machine, takes no AVX-512 kernel:
// its Q8_0 dequantizer once stayed the AVX-512 one.
func TestAVX2FamilyRunsNoAVX512(t *testing.T) {
	if !haveSIMD {
		t.Skip("no AVX2")
	}
	k, err := chooseKernels("avx2")
	if err != nil {
		t.Fatal(err)
	}
	if k.vnni || k.amx || k.attn4 != avx2Attn4 {
		t.Errorf("vnni %v amx %v attn4 %v", k.vnni, k.amx, k.attn4)
	}
	names := []string{funcName(k.dequant), funcName(k.attn4.dots), funcName(k.attn4.accum)}
	v := reflect.ValueOf(k.f)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Func && !f.IsNil() {
			names = append(names, runtime.FuncForPC(f.Pointer()).Name())
		}
	}
	for _, n := range names {
		if strings.Contains(n, "512") || strings.Contains(n, "VNNI") || strings.Contains(n, "AMX") {
			t.Errorf("the avx2 family runs %s", n)
		}
	}
}

func funcName(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }
