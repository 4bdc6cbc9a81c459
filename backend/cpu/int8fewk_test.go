package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// BenchmarkFewK times the row-major batch-1 kernels (fewKernel) against the
// row lanes on cached data, in ns a row's super-block: what each costs where
// the memory is not the bound. `go test ./backend/cpu -run X -bench FewK`.
func BenchmarkFewK(b *testing.B) {
	if !haveVNNI {
		b.Skip("no AVX512-VNNI")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []quant.DType{quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		for _, cols := range []int{768, 2560} {
			const rows = 64
			wb := synth.RandomMatrix(rng, dt, rows, cols, 0.5)
			w, err := model.NewMatrix(dt, rows, cols, wb)
			if err != nil {
				b.Fatal(err)
			}
			var a acts
			a.need(randVec(rng, cols), 1, w, int8Kind(dt))
			nsum := a.q8k.nsum
			if dt == quant.Q6_K {
				nsum = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(a.q8k.bs))), len(a.q8k.bs)/2)
			}
			rb, nb := dt.RowBytes(cols), cols/qkK
			acc, out := make([]float32, 48), make([]float32, rows)
			for _, k := range []struct {
				name string
				f    rows16Kernel
			}{{"lanes", rowKernel(dt)}, {"few", fewKernel(dt)}} {
				b.Run(fmt.Sprintf("%s/c%d/%s", dt, cols, k.name), func(b *testing.B) {
					for b.Loop() {
						for g := 0; g < rows; g += 16 {
							k.f(&wb[g*rb], rb, &a.q8k.qs[0], &a.q8k.d[0], &nsum[0], cols, nb, nb, 1, &acc[0], &out[g], rows)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*nb), "ns/rowsb")
				})
			}
		}
	}
}
