package quant

import "math"

// Q8Block is the number of weights sharing one scale in Q8_0.
const Q8Block = 32

// Q8BlockBytes is an fp16 scale followed by 32 int8 values.
const Q8BlockBytes = 2 + Q8Block

func init() {
	register(&Format{Type: Q8_0, BlockElems: Q8Block, BlockBytes: Q8BlockBytes,
		Dequantize: DequantizeQ8, Quantize: QuantizeQ8})
}

// QuantizeQ8 writes src (a multiple of 32 values) as Q8_0 blocks into dst,
// as ggml's quantize_row_q8_0_ref does.
func QuantizeQ8(src []float32, dst []byte) {
	for b := 0; b < len(src)/Q8Block; b++ {
		x := src[b*Q8Block : (b+1)*Q8Block]
		out := dst[b*Q8BlockBytes : (b+1)*Q8BlockBytes]
		var amax float32
		for _, v := range x {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		h := F32ToF16(d)
		out[0], out[1] = byte(h), byte(h>>8)
		for i, v := range x {
			out[2+i] = byte(int8(math.Round(float64(v * id))))
		}
	}
}

// DequantizeQ8 writes the values of Q8_0 blocks: scale times each int8.
func DequantizeQ8(src []byte, dst []float32) {
	for b := 0; b < len(dst)/Q8Block; b++ {
		blk := src[b*Q8BlockBytes : (b+1)*Q8BlockBytes]
		d := f16Table[uint16(blk[0])|uint16(blk[1])<<8]
		for i := range Q8Block {
			dst[b*Q8Block+i] = d * float32(int8(blk[2+i]))
		}
	}
}
