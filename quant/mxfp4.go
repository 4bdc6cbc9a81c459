package quant

import (
	"math"
)

// MXFP4 (ggml's type 39, gpt-oss's experts): blocks of 32 E2M1 values
// sharing one E8M0 scale: e, qs[16], the low nibbles the first 16 values
// and the high ones the last 16, as IQ4_NL lays them out.
const MXFP4 DType = 39

// MXFP4Grid is E2M1's values doubled (ggml's kvalues_mxfp4); the scale
// E8MHalf(e) halves them back.
var MXFP4Grid = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

func init() {
	names[MXFP4] = "MXFP4"
	register(&Format{Type: MXFP4, BlockElems: 32, BlockBytes: 17, Dequantize: dequantMXFP4, Quantize: quantizeMXFP4})
}

// E8MHalf is 2^(e-128), the E8M0 scale e halved, as ggml's
// ggml_e8m0_to_fp32_half computes it (subnormal for e < 2).
func E8MHalf(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantMXFP4(src []byte, dst []float32) {
	for b := range len(dst) / 32 {
		blk, y := src[b*17:], dst[b*32:]
		d := E8MHalf(blk[0])
		for j := range 16 {
			q := blk[1+j]
			y[j] = float32(MXFP4Grid[q&0xf]) * d
			y[j+16] = float32(MXFP4Grid[q>>4]) * d
		}
	}
}

// quantizeMXFP4 is ggml's quantize_row_mxfp4_ref: the exponent of the
// block's largest magnitude less 2, each value to the nearest grid point
// (the first on ties).
func quantizeMXFP4(src []float32, dst []byte) {
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*17:(b+1)*17]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		var e uint8
		if amax > 0 {
			e = uint8(int(math.Floor(float64(log2f(amax)))) - 2 + 127)
		}
		out[0] = e
		d := E8MHalf(e)
		for j := range 16 {
			out[1+j] = bestMXFP4(x[j], d) | bestMXFP4(x[j+16], d)<<4
		}
	}
}

// log2f is C's log2f on a float: exact at powers of two, as the floor
// above needs.
func log2f(x float32) float32 {
	frac, exp := math.Frexp(float64(x))
	if frac == 0.5 {
		return float32(exp - 1)
	}
	return float32(math.Log2(float64(x)))
}

func bestMXFP4(x, d float32) uint8 {
	best, bestErr := 0, abs32(float32(MXFP4Grid[0])*d-x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(MXFP4Grid[i])*d - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}
