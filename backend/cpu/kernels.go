package cpu

import (
	"math"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
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
	scale := rmsScale(x, eps)
	for i, v := range x {
		out[i] = w[i] * (scale * v)
	}
}

// rmsScale is 1/sqrt(mean(x^2) + eps), the scale an RMS norm applies.
func rmsScale(x []float32, eps float32) float32 {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	ss /= float32(len(x))
	ss += eps
	return float32(1 / math.Sqrt(float64(ss)))
}

// ropeTable holds cos and sin for each position and rotated pair, up to
// the positions the KV store can hold; later ones are computed on the fly.
type ropeTable struct {
	pairs    int
	p        ropeParams
	cos, sin []float32
}

func newRopeTable(c model.Config, factors []float32, positions int) *ropeTable {
	pairs := c.RopeDim / 2
	t := &ropeTable{pairs: pairs, p: newRopeParams(c, factors),
		cos: make([]float32, positions*pairs), sin: make([]float32, positions*pairs)}
	for p := range positions {
		t.p.angles(p, t.cos[p*pairs:(p+1)*pairs], t.sin[p*pairs:(p+1)*pairs])
	}
	return t
}

// rope rotates every head of vec (heads x headDim) for position pos; simd
// takes the assembly, the same products and adds as the loop.
func (t *ropeTable) rope(c model.Config, vec []float32, heads, pos int, simd bool) {
	var cos, sin []float32
	if pos < len(t.cos)/max(t.pairs, 1) {
		cos, sin = t.cos[pos*t.pairs:(pos+1)*t.pairs], t.sin[pos*t.pairs:(pos+1)*t.pairs]
	} else {
		cos, sin = make([]float32, t.pairs), make([]float32, t.pairs)
		t.p.angles(pos, cos, sin)
	}
	if heads == 0 || t.pairs == 0 {
		return
	}
	_ = vec[(heads-1)*c.HeadDim+2*t.pairs-1] // the kernels' last element
	switch {
	case simd && c.RopeNeoX && t.pairs%8 == 0:
		ropeNeoXAVX2(&vec[0], c.HeadDim, heads, &cos[0], &sin[0], t.pairs)
		return
	case simd && !c.RopeNeoX && t.pairs%4 == 0:
		ropePairsAVX2(&vec[0], c.HeadDim, heads, &cos[0], &sin[0], t.pairs)
		return
	}
	for h := range heads {
		v := vec[h*c.HeadDim : (h+1)*c.HeadDim]
		for j := range t.pairs {
			co, si := cos[j], sin[j]
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
