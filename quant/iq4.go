package quant

import "encoding/binary"

// IQ4Grid is the non-linear 4-bit grid of IQ4_NL and IQ4_XS (ggml's
// kvalues_iq4nl).
var IQ4Grid = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func init() {
	register(&Format{Type: IQ4_NL, BlockElems: 32, BlockBytes: 18, Dequantize: dequantIQ4NL})
	register(&Format{Type: IQ4_XS, BlockElems: qkK, BlockBytes: 136, Dequantize: dequantIQ4XS})
}

// IQ4_NL: d, qs[16]; each nibble indexes the grid.
func dequantIQ4NL(src []byte, dst []float32) {
	for b := range len(dst) / 32 {
		blk, y := src[b*18:], dst[b*32:]
		d := half(blk)
		for j := range 16 {
			q := blk[2+j]
			y[j] = d * float32(IQ4Grid[q&0xf])
			y[j+16] = d * float32(IQ4Grid[q>>4])
		}
	}
}

// IQ4_XS: d, scales_h (uint16), scales_l[4], qs[128]: eight 32-element
// sub-blocks with 6-bit scales biased by 32.
func dequantIQ4XS(src []byte, dst []float32) {
	for b := range len(dst) / qkK {
		blk, y := src[b*136:], dst[b*qkK:]
		d := half(blk)
		qs := blk[8:136]
		for ib := range 8 {
			dl := d * float32(IQ4XSScale(blk, ib))
			q, yy := qs[16*ib:], y[32*ib:]
			for j := range 16 {
				yy[j] = dl * float32(IQ4Grid[q[j]&0xf])
				yy[j+16] = dl * float32(IQ4Grid[q[j]>>4])
			}
		}
	}
}

// IQ4XSScale is an IQ4_XS block's sub-block ib scale: 4 bits from scales_l,
// 2 from scales_h, less their bias of 32.
func IQ4XSScale(blk []byte, ib int) int {
	sh := binary.LittleEndian.Uint16(blk[2:])
	return int(blk[4+ib/2]>>(4*uint(ib%2))&0xf) | int((sh>>(2*uint(ib)))&3)<<4 - 32
}
