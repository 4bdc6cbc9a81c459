package quant

import "encoding/binary"

// The legacy 32-element formats: a block holds an fp16 scale d (and for
// the _1 formats an fp16 offset m) and 4- or 5-bit quants; element j of the
// first half is in the low nibble of byte j, element j+16 in its high nibble,
// and Q5's fifth bits are a little-endian uint32. Products are rounded to
// float32 before the offset is added, as ggml computes them (float32(...)
// keeps Go from fusing them).
func init() {
	register(&Format{Type: Q4_0, BlockElems: 32, BlockBytes: 18, Dequantize: dequantQ4_0})
	register(&Format{Type: Q4_1, BlockElems: 32, BlockBytes: 20, Dequantize: dequantQ4_1})
	register(&Format{Type: Q5_0, BlockElems: 32, BlockBytes: 22, Dequantize: dequantQ5_0})
	register(&Format{Type: Q5_1, BlockElems: 32, BlockBytes: 24, Dequantize: dequantQ5_1})
}

func half(b []byte) float32 { return f16Table[binary.LittleEndian.Uint16(b)] }

func dequantQ4_0(src []byte, dst []float32) {
	for b := range len(dst) / 32 {
		blk, y := src[b*18:], dst[b*32:]
		d := half(blk)
		for j := range 16 {
			q := blk[2+j]
			y[j] = float32(int(q&0x0f)-8) * d
			y[j+16] = float32(int(q>>4)-8) * d
		}
	}
}

func dequantQ4_1(src []byte, dst []float32) {
	for b := range len(dst) / 32 {
		blk, y := src[b*20:], dst[b*32:]
		d, m := half(blk), half(blk[2:])
		for j := range 16 {
			q := blk[4+j]
			y[j] = float32(float32(q&0x0f)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

func dequantQ5_0(src []byte, dst []float32) {
	for b := range len(dst) / 32 {
		blk, y := src[b*22:], dst[b*32:]
		d := half(blk)
		qh := binary.LittleEndian.Uint32(blk[2:])
		for j := range 16 {
			q := blk[6+j]
			h0 := byte((qh>>uint(j))<<4) & 0x10
			h1 := byte(qh>>uint(j+12)) & 0x10
			y[j] = float32(int(q&0x0f|h0)-16) * d
			y[j+16] = float32(int(q>>4|h1)-16) * d
		}
	}
}

func dequantQ5_1(src []byte, dst []float32) {
	for b := range len(dst) / 32 {
		blk, y := src[b*24:], dst[b*32:]
		d, m := half(blk), half(blk[2:])
		qh := binary.LittleEndian.Uint32(blk[4:])
		for j := range 16 {
			q := blk[8+j]
			h0 := byte((qh>>uint(j))<<4) & 0x10
			h1 := byte(qh>>uint(j+12)) & 0x10
			y[j] = float32(float32(q&0x0f|h0)*d) + m
			y[j+16] = float32(float32(q>>4|h1)*d) + m
		}
	}
}
