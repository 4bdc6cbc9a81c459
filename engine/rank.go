package engine

import (
	"math"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// rankScores runs a reranker's head on the pooled state x, as llama.cpp's
// rank pooling does: tanh(cls x + b), then cls.output, then (Qwen3) a
// softmax. The head is a matrix or two per request, so it runs here on
// the engine's goroutine rather than in the backend's batch.
func rankScores(h *model.RankHead, x []float32) []float32 {
	cur := x
	if h.Dense != nil {
		cur = matVec(h.Dense, h.DenseB, cur)
		for i, v := range cur {
			cur[i] = float32(math.Tanh(float64(v)))
		}
	}
	if h.Out != nil {
		cur = matVec(h.Out, h.OutB, cur)
	}
	cur = cur[:min(len(cur), h.Outputs())]
	if h.Softmax {
		backend.Softmax(cur, cur)
	}
	return cur
}

// matVec is M x + b (b may be nil). ggml's CPU matmul meets an F16 matrix
// with x rounded to F16, so this does too; other types meet x as it is.
func matVec(m *model.Matrix, b, x []float32) []float32 {
	xr := x
	if m.Type == quant.F16 {
		xr = make([]float32, len(x))
		for i, v := range x {
			xr[i] = quant.F16ToF32(quant.F32ToF16(v))
		}
	}
	row := make([]float32, m.Cols)
	y := make([]float32, m.Rows)
	for r := range m.Rows {
		m.Row(r, row)
		var s float64
		for j, w := range row {
			s += float64(w) * float64(xr[j])
		}
		y[r] = float32(s)
		if b != nil {
			y[r] += b[r]
		}
	}
	return y
}
