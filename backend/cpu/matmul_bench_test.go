package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// BenchmarkMatmul reports GMAC/s of one thread on an FFN-shaped matrix (too
// big for L2) at decode batch sizes: go test -bench Matmul ./model
func BenchmarkMatmul(b *testing.B) {
	best, err := chooseKernels("")
	if err != nil {
		b.Fatal(err)
	}
	const rows, cols = 4096, 1024
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []quant.DType{quant.Q8_0, quant.F16, quant.F32} {
		w, err := model.NewMatrix(typ, rows, cols, synth.RandomMatrix(rng, typ, rows, cols, 0.5))
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 8, 32} {
			x := randVec(rng, n*cols)
			out := make([]float32, n*rows)
			scratch := make([]float32, scratchLen(cols))
			b.Run(fmt.Sprintf("%v/batch%d", typ, n), func(b *testing.B) {
				for b.Loop() {
					best.matmulRange(out, x, nil, n, w, 0, rows, scratch)
				}
				b.ReportMetric(float64(n*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}
