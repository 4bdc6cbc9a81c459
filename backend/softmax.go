package backend

import "math"

// Softmax writes softmax(x) to dst (which may be x) as ggml's soft_max
// computes it: exp of x less its max, summed in float64, each value times
// float32(1/sum). The backends' routers and the engine's heads share it,
// so both round as llama.cpp does.
func Softmax(dst, x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		dst[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range dst {
		dst[i] *= inv
	}
}
