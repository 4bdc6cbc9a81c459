package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestF16Conversion(t *testing.T) {
	for _, f := range []float32{0, 1, -1, 0.5, 65504, 1e-7, 6.1e-5, -3.14159, 1e6} {
		h := F32ToF16(f)
		back := F16ToF32(h)
		if F32ToF16(back) != h {
			t.Errorf("%v -> %#x -> %v does not round trip", f, h, back)
		}
	}
	for h := range 1 << 16 {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN payloads
		}
		if got := F32ToF16(F16ToF32(uint16(h))); got != uint16(h) {
			t.Fatalf("half %#x -> %v -> %#x", h, F16ToF32(uint16(h)), got)
		}
	}
	if F32ToF16(1e6) != 0x7c00 || F32ToF16(1+1.0/2048) != 0x3c00 {
		t.Error("overflow or ties-to-even rounding wrong")
	}
}

// TestTable: every entry's row bytes follow its block layout, and a
// dequantization writes whole blocks.
func TestTable(t *testing.T) {
	for _, dt := range []DType{F32, F16, Q8_0} {
		f := Lookup(dt)
		if f == nil || !dt.Supported() || dt.RowBytes(f.BlockElems*3) != 3*f.BlockBytes || dt.RowBytes(f.BlockElems*3+1) != -1 && f.BlockElems > 1 {
			t.Fatalf("%s: %+v", dt, f)
		}
		src := make([]float32, 2*f.BlockElems)
		for i := range src {
			src[i] = float32(i%7) - 3
		}
		b := make([]byte, dt.RowBytes(len(src)))
		f.Quantize(src, b)
		got := make([]float32, len(src))
		f.Dequantize(b, got)
		for i := range src {
			if d := got[i] - src[i]; d > 0.05 || d < -0.05 {
				t.Fatalf("%s: value %d: %v -> %v", dt, i, src[i], got[i])
			}
		}
	}
	if DType(9).Supported() || DType(9).RowBytes(32) != -1 { // Q8_1: an activation format, no entry
		t.Fatal("Q8_1 has an entry")
	}
	for _, dt := range []DType{BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS} {
		if !dt.Supported() {
			t.Errorf("%s has no entry", dt)
		}
	}
	if p, err := Parse("q8_0"); err != nil || p != Q8_0 {
		t.Fatal(p, err)
	}
}

// TestQuantizeRoundTrip: every format with a quantizer dequantizes its own
// output back to within its precision (RMS error relative to the RMS of the
// data), and zero blocks stay zero.
func TestQuantizeRoundTrip(t *testing.T) {
	bound := map[DType]float64{F32: 0, F16: 1e-3, BF16: 5e-3, Q8_0: 0.01, Q5_0: 0.05, Q5_1: 0.05, Q4_0: 0.1, Q4_1: 0.1,
		Q2_K: 0.35, Q3_K: 0.2, Q4_K: 0.1, Q5_K: 0.05, Q6_K: 0.025, IQ4_NL: 0.1, IQ4_XS: 0.1, MXFP4: 0.2}
	for dt := range formats {
		if _, ok := bound[dt]; !ok {
			t.Errorf("%s: computable but not covered here (every format needs a quantizer for modelgen)", dt)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for dt, b := range bound {
		f := Lookup(dt)
		if f == nil || f.Quantize == nil {
			t.Fatalf("%s: no quantizer", dt)
		}
		src := make([]float32, 8*f.BlockElems*32)
		for i := range src {
			src[i] = float32(rng.NormFloat64())
		}
		src[5] = 0
		buf := make([]byte, dt.RowBytes(len(src)))
		f.Quantize(src, buf)
		got := make([]float32, len(src))
		f.Dequantize(buf, got)
		var se, ss float64
		for i := range src {
			d := float64(got[i] - src[i])
			se, ss = se+d*d, ss+float64(src[i])*float64(src[i])
		}
		if rel := math.Sqrt(se / ss); rel > b {
			t.Errorf("%s: relative RMS error %.4f > %.4f", dt, rel, b)
		}
		zero := make([]float32, f.BlockElems)
		zb := make([]byte, dt.RowBytes(len(zero)))
		f.Quantize(zero, zb)
		f.Dequantize(zb, zero)
		for _, v := range zero {
			if v != 0 {
				t.Fatalf("%s: a zero block dequantizes to %v", dt, v)
			}
		}
	}
}
