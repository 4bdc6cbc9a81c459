package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/quant"
)

// TestSIMDDequantMatchesQuant: the AVX2 K-quant dequantizers give quant's
// values bit for bit on random blocks (random quants and scales, finite
// fp16 super-scales of both signs).
func TestSIMDDequantMatchesQuant(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	// Where each format keeps its fp16 scales in a block: random bytes there
	// could be NaN or Inf, which the test would only compare as bits.
	halves := map[quant.DType][]int{quant.Q4_K: {0, 2}, quant.Q5_K: {0, 2}, quant.Q6_K: {208}, quant.Q4_0: {0},
		quant.Q4_1: {0, 2}, quant.Q5_0: {0}, quant.Q5_1: {0, 2}, quant.IQ4_NL: {0}, quant.IQ4_XS: {0},
		quant.Q2_K: {80, 82}, quant.Q3_K: {108}, quant.BF16: nil, quant.MXFP4: nil}
	for dt, offs := range halves {
		f, simd := quant.Lookup(dt), simdDequant(dt)
		if simd == nil {
			t.Fatalf("%s: no SIMD dequantizer", dt)
		}
		const blocks = 67 // past a multiple of 64 and of 8: the kernels' chunks and tails
		src := make([]byte, blocks*f.BlockBytes)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		for b := range blocks {
			blk := src[b*f.BlockBytes:]
			for _, o := range offs {
				binary.LittleEndian.PutUint16(blk[o:], quant.F32ToF16(float32(rng.NormFloat64()*0.01)))
			}
		}
		want, got := make([]float32, blocks*f.BlockElems), make([]float32, blocks*f.BlockElems)
		f.Dequantize(src, want)
		simd(src, got)
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("%s element %d: simd %v, quant %v", dt, i, got[i], want[i])
			}
		}
	}
}
