package quant

// The K-quants: 256-element super-blocks with sub-block scales, as ggml
// lays them out and dequantizes them (dequantize_row_q*_K). Each product is
// rounded to float32 before a min is subtracted (float32(...) keeps Go from
// fusing them), as ggml's scalar code computes it.

const qkK = 256

func init() {
	register(&Format{Type: Q2_K, BlockElems: qkK, BlockBytes: 84, Dequantize: dequantQ2K})
	register(&Format{Type: Q3_K, BlockElems: qkK, BlockBytes: 110, Dequantize: dequantQ3K})
	register(&Format{Type: Q4_K, BlockElems: qkK, BlockBytes: 144, Dequantize: dequantQ4K})
	register(&Format{Type: Q5_K, BlockElems: qkK, BlockBytes: 176, Dequantize: dequantQ5K})
	register(&Format{Type: Q6_K, BlockElems: qkK, BlockBytes: 210, Dequantize: dequantQ6K})
}

// Q2_K: scales[16] (4-bit scale | 4-bit min), qs[64] (2-bit), d, dmin.
func dequantQ2K(src []byte, dst []float32) {
	for b := range len(dst) / qkK {
		blk, y := src[b*84:], dst[b*qkK:]
		scales, qs := blk[:16], blk[16:80]
		d, dmin := half(blk[80:]), half(blk[82:])
		is, o := 0, 0
		for n := 0; n < qkK; n += 128 {
			q := qs[n/4:]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					sc := scales[is]
					is++
					dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
					for l := range 16 {
						y[o] = float32(dl*float32((q[l+16*half]>>shift)&3)) - ml
						o++
					}
				}
			}
		}
	}
}

// Q3_K: hmask[32] (high bits), qs[64] (low 2 bits), scales[12] (sixteen
// 6-bit scales, biased by 32), d.
func dequantQ3K(src []byte, dst []float32) {
	for b := range len(dst) / qkK {
		blk, y := src[b*110:], dst[b*qkK:]
		hm, qs := blk[:32], blk[32:96]
		d := half(blk[108:])
		scales := Q3KScales(blk)
		is, o := 0, 0
		m := byte(1)
		for n := 0; n < qkK; n += 128 {
			q := qs[n/4:]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					dl := d * float32(scales[is])
					is++
					for l := range 16 {
						v := int8((q[l+16*half] >> shift) & 3)
						if hm[l+16*half]&m == 0 {
							v -= 4
						}
						y[o] = dl * float32(v)
						o++
					}
				}
				m <<= 1
			}
		}
	}
}

// Q3KScales unpacks a Q3_K block's sixteen 6-bit group scales (low 4 bits
// from bytes 96..103, high 2 bits from 104..107), less their bias of 32.
func Q3KScales(blk []byte) (scales [16]int8) {
	sc12 := blk[96:108]
	for j := range 16 {
		lo := sc12[j%8] >> (4 * uint(j/8)) & 0xf
		hi := sc12[8+j%4] >> (2 * uint(j/4)) & 3
		scales[j] = int8(lo|hi<<4) - 32
	}
	return scales
}

// scaleMinK4 unpacks the j'th 6-bit scale and min of Q4_K and Q5_K.
func scaleMinK4(j int, q []byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// K4ScaleMins returns a Q4_K or Q5_K block's eight 6-bit sub-block scales
// and mins as integers (for integer dot products); blk starts at the block.
func K4ScaleMins(blk []byte) (sc, m [8]uint8) {
	for j := range 8 {
		sc[j], m[j] = scaleMinK4(j, blk[4:16])
	}
	return sc, m
}

// K4Scales writes a Q4_K or Q5_K block's eight sub-block scales (d times
// the 6-bit scale) and mins (dmin times the 6-bit min), as ggml computes
// them; blk starts at the block's d.
func K4Scales(blk []byte, ds, ms *[8]float32) {
	d, dmin := half(blk), half(blk[2:])
	for j := range 8 {
		sc, m := scaleMinK4(j, blk[4:16])
		ds[j], ms[j] = d*float32(sc), dmin*float32(m)
	}
}

// Q6KScales writes a Q6_K block's sixteen sub-block multipliers, d times
// the int8 scale; blk starts at the block.
func Q6KScales(blk []byte, out *[16]float32) {
	d := half(blk[208:])
	for j := range 16 {
		out[j] = d * float32(int8(blk[192+j]))
	}
}

// Q4_K: d, dmin, scales[12], qs[128].
func dequantQ4K(src []byte, dst []float32) {
	var ds, ms [8]float32
	for b := range len(dst) / qkK {
		blk, y := src[b*144:], dst[b*qkK:]
		K4Scales(blk, &ds, &ms)
		q := blk[16:144]
		for p := range 4 {
			d1, mm1, d2, mm2 := ds[2*p], ms[2*p], ds[2*p+1], ms[2*p+1]
			for l := range 32 {
				y[64*p+l] = float32(d1*float32(q[l]&0xf)) - mm1
				y[64*p+32+l] = float32(d2*float32(q[l]>>4)) - mm2
			}
			q = q[32:]
		}
	}
}

// Q5_K: d, dmin, scales[12], qh[32], qs[128].
func dequantQ5K(src []byte, dst []float32) {
	for b := range len(dst) / qkK {
		blk, y := src[b*176:], dst[b*qkK:]
		d, dmin := half(blk), half(blk[2:])
		scales, qh, ql := blk[4:16], blk[16:48], blk[48:176]
		u1, u2 := byte(1), byte(2)
		o := 0
		for is := 0; is < 8; is += 2 {
			sc1, m1 := scaleMinK4(is, scales)
			sc2, m2 := scaleMinK4(is+1, scales)
			d1, mm1 := d*float32(sc1), dmin*float32(m1)
			d2, mm2 := d*float32(sc2), dmin*float32(m2)
			for l := range 32 {
				v1, v2 := ql[l]&0xf, ql[l]>>4
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				y[o+l] = float32(d1*float32(v1)) - mm1
				y[o+32+l] = float32(d2*float32(v2)) - mm2
			}
			ql, o = ql[32:], o+64
			u1, u2 = u1<<2, u2<<2
		}
	}
}

// Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8), d.
func dequantQ6K(src []byte, dst []float32) {
	for b := range len(dst) / qkK {
		blk, y := src[b*210:], dst[b*qkK:]
		ql, qh, sc := blk[:128], blk[128:192], blk[192:208]
		d := half(blk[208:])
		for n := 0; n < qkK; n += 128 {
			yy, l0, h0, s0 := y[n:], ql[n/2:], qh[n/4:], sc[n/16:]
			for l := range 32 {
				is := l / 16
				q1 := int8(l0[l]&0xf|((h0[l]>>0)&3)<<4) - 32
				q2 := int8(l0[l+32]&0xf|((h0[l]>>2)&3)<<4) - 32
				q3 := int8(l0[l]>>4|((h0[l]>>4)&3)<<4) - 32
				q4 := int8(l0[l+32]>>4|((h0[l]>>6)&3)<<4) - 32
				yy[l] = float32(d*float32(int8(s0[is]))) * float32(q1)
				yy[l+32] = float32(d*float32(int8(s0[is+2]))) * float32(q2)
				yy[l+64] = float32(d*float32(int8(s0[is+4]))) * float32(q3)
				yy[l+96] = float32(d*float32(int8(s0[is+6]))) * float32(q4)
			}
		}
	}
}
