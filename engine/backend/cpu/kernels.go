package cpu

import (
	"math"

	"github.com/batchd/batchd/engine/model"
	"github.com/batchd/batchd/engine/quant"
)

// The pure-Go kernels. They define the numerics every faster path is checked against.

func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func dotF16(w []uint16, x []float32) float32 {
	x = x[:len(w)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		s0 += f16Table[w[i]] * x[i]
		s1 += f16Table[w[i+1]] * x[i+1]
		s2 += f16Table[w[i+2]] * x[i+2]
		s3 += f16Table[w[i+3]] * x[i+3]
	}
	for ; i < len(w); i++ {
		s0 += f16Table[w[i]] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// matmulRows computes out[t*W.Rows+r] = W[r] . x[t] for rows [lo, hi) and all
// n tokens. Each weight row is read once and applied to every token while it
// is in cache: this is what makes a batched decode step cost about as much as
// a single one. Quantized rows are dequantized into scratch (one row) first.
func matmulRows(out, x []float32, n int, w *model.Matrix, lo, hi int, scratch []float32) {
	cols := w.Cols
	switch w.Type {
	case quant.F32:
		for r := lo; r < hi; r++ {
			row := w.F32()[r*cols : (r+1)*cols]
			for t := range n {
				out[t*w.Rows+r] = dotF32(row, x[t*cols:(t+1)*cols])
			}
		}
	case quant.F16:
		for r := lo; r < hi; r++ {
			row := w.F16()[r*cols : (r+1)*cols]
			for t := range n {
				out[t*w.Rows+r] = dotF16(row, x[t*cols:(t+1)*cols])
			}
		}
	default: // any format in quant's table: exact dequantization, then float dots
		rb, deq := w.Type.RowBytes(cols), quant.Lookup(w.Type).Dequantize
		row := scratch[:cols]
		for r := lo; r < hi; r++ {
			deq(w.Data[r*rb:(r+1)*rb], row)
			for t := range n {
				out[t*w.Rows+r] = dotF32(row, x[t*cols:(t+1)*cols])
			}
		}
	}
}

// addTo adds src into dst element by element.
func addTo(dst, src []float32) {
	for i, v := range src {
		dst[i] += v
	}
}

func rmsnorm(out, x, w []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	ss /= float32(len(x))
	ss += eps
	scale := float32(1 / math.Sqrt(float64(ss)))
	for i, v := range x {
		out[i] = w[i] * (scale * v)
	}
}

// ropeTable holds cos and sin for each position and rotated pair.
type ropeTable struct {
	pairs    int
	cos, sin []float32
}

func newRopeTable(c model.Config, positions int) *ropeTable {
	pairs := c.RopeDim / 2
	t := &ropeTable{pairs: pairs, cos: make([]float32, positions*pairs), sin: make([]float32, positions*pairs)}
	for p := range positions {
		for j := range pairs {
			t.cos[p*pairs+j], t.sin[p*pairs+j] = ropeAngle(c, p, j)
		}
	}
	return t
}

func ropeAngle(c model.Config, pos, j int) (float32, float32) {
	freq := 1 / math.Pow(float64(c.RopeTheta), float64(2*j)/float64(c.RopeDim))
	s, co := math.Sincos(float64(pos) * float64(float32(freq)))
	return float32(co), float32(s)
}

// rope rotates every head of vec (heads x headDim) for position pos.
func (t *ropeTable) rope(c model.Config, vec []float32, heads, pos int) {
	for h := range heads {
		v := vec[h*c.HeadDim : (h+1)*c.HeadDim]
		for j := range t.pairs {
			var co, si float32
			if idx := pos*t.pairs + j; idx < len(t.cos) {
				co, si = t.cos[idx], t.sin[idx]
			} else {
				co, si = ropeAngle(c, pos, j)
			}
			a, b := 2*j, 2*j+1
			if c.RopeNeoX {
				a, b = j, j+t.pairs
			}
			x0, x1 := v[a], v[b]
			v[a] = x0*co - x1*si
			v[b] = x0*si + x1*co
		}
	}
}

func silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }
