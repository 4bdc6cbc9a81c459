package quant

import (
	"encoding/binary"
	"math"
)

func init() {
	register(&Format{Type: BF16, BlockElems: 1, BlockBytes: 2, Dequantize: dequantBF16})
}

// dequantBF16: a bfloat16 is the top half of a float32's bits.
func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}
