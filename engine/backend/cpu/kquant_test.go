package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/engine/quant"
)

// TestSIMDDequantMatchesQuant: the AVX2 K-quant dequantizers give quant's
// values bit for bit on random blocks (random quants and scales, finite
// fp16 super-scales of both signs).
func TestSIMDDequantMatchesQuant(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, dt := range []quant.DType{quant.Q4_K, quant.Q6_K, quant.Q5_K, quant.Q4_0} {
		f, simd := quant.Lookup(dt), simdDequant(dt)
		const blocks = 64
		src := make([]byte, blocks*f.BlockBytes)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		for b := range blocks {
			blk := src[b*f.BlockBytes:]
			h := func() uint16 { return quant.F32ToF16(float32(rng.NormFloat64() * 0.01)) }
			switch dt {
			case quant.Q4_K, quant.Q5_K:
				binary.LittleEndian.PutUint16(blk, h())
				binary.LittleEndian.PutUint16(blk[2:], h())
			case quant.Q4_0:
				binary.LittleEndian.PutUint16(blk, h())
			case quant.Q6_K:
				binary.LittleEndian.PutUint16(blk[208:], h())
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
