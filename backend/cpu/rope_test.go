package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/model"
)

// TestRopeSIMDMatchesGo holds the RoPE kernels to ropeTable.rope's loop,
// bit for bit, for both pair layouts, full and partial rotary dimensions
// and positions past the table (angles computed on the fly).
func TestRopeSIMDMatchesGo(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this build")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, neox := range []bool{false, true} {
		for _, shape := range []struct{ hd, rot, heads int }{{64, 64, 12}, {128, 128, 3}, {128, 64, 2}, {80, 32, 5}, {96, 24, 1}} {
			c := model.Config{HeadDim: shape.hd, RopeDim: shape.rot, RopeNeoX: neox, RopeTheta: 10000, Context: 64}
			rt := newRopeTable(c, nil, 40)
			for _, pos := range []int{0, 1, 17, 39, 40, 63} {
				want := make([]float32, shape.heads*shape.hd)
				for i := range want {
					want[i] = float32(rng.NormFloat64() * 3)
				}
				got := append([]float32(nil), want...)
				rt.rope(c, want, shape.heads, pos, false)
				rt.rope(c, got, shape.heads, pos, true)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("neox %v shape %+v pos %d: element %d is %v, the loop's %v", neox, shape, pos, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestMaxSIMDMatchesLoop: the softmax's max through maxAVX2 is the loop's.
func TestMaxSIMDMatchesLoop(t *testing.T) {
	if !haveSIMD {
		t.Skip("no SIMD kernels on this build")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{8, 16, 24, 32, 40, 64, 96, 128, 136, 520} {
		for range 20 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64()*10 - 50)
			}
			x[rng.IntN(n)] += float32(rng.IntN(2)) * 100 // the max anywhere, or near-ties
			want := x[0]
			for _, v := range x {
				if v > want {
					want = v
				}
			}
			if got := maxAVX2(&x[0], n); got != want {
				t.Fatalf("n %d: max %v, the loop's %v", n, got, want)
			}
		}
	}
}
