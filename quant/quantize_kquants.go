package quant

import "math"

// Reference quantizers for the K-quants, following ggml's
// quantize_row_q*_K_ref (what llama-quantize writes when it has no
// importance matrix), so that modelgen can write these formats. Every
// product that feeds a sum is rounded to float32 on its own (float32(...)
// keeps Go from fusing it into an FMA), as ggml's scalar C computes it; the
// test compares the bytes with llama-quantize's.
func init() {
	formats[Q2_K].Quantize = quantizeQ2K
	formats[Q3_K].Quantize = quantizeQ3K
	formats[Q4_K].Quantize = quantizeQ4K
	formats[Q5_K].Quantize = quantizeQ5K
	formats[Q6_K].Quantize = quantizeQ6K
}

const groupMaxEps = 1e-15

// nearestInt rounds half to even through the float32 magic-number trick
// ggml uses (valid for |f| < 2^22).
func nearestInt(f float32) int {
	i := int32(math.Float32bits(f + 12582912))
	return int(i&0x007fffff - 0x00400000)
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// signedAbsMax returns the element of largest magnitude (its sign kept)
// and that magnitude; the first wins a tie.
func signedAbsMax(x []float32) (m, amax float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, m = a, v
		}
	}
	return m, amax
}

// makeQXQuants is ggml's make_qx_quants with rmse_type 1 and no importance
// weights (w = x²): symmetric levels in [-nmax, nmax-1], the scale refined
// over 18 nearby grids. L gets levels biased by nmax.
func makeQXQuants(nmax int, x []float32, L []int8) float32 {
	m, amax := signedAbsMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fn := float32(nmax)
	level := func(iscale, v float32) int { return clampInt(nearestInt(iscale*v), -nmax, nmax-1) }
	iscale := -fn / m
	var sumlx, suml2 float32
	for i, v := range x {
		l := level(iscale, v)
		L[i] = int8(l + nmax)
		w := v * v
		sumlx += float32(float32(w*v) * float32(l))
		suml2 += float32(float32(w*float32(l)) * float32(l))
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fn + float32(float32(0.1)*float32(is))) / m
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := level(iscale, v)
			w := v * v
			sumlx += float32(float32(w*v) * float32(l))
			suml2 += float32(float32(w*float32(l)) * float32(l))
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				L[i] = int8(nmax + level(iscale, v))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse: start from the
// nearest levels, then move single levels while the weighted fit improves.
func makeQ3Quants(nmax int, x []float32, L []int8) float32 {
	m, amax := signedAbsMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	iscale := -float32(nmax) / m
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l)
		w := v * v
		sumlx += float32(float32(w*v) * float32(l))
		suml2 += float32(float32(w*float32(l)) * float32(l))
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w := v * v
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				nl := clampInt(nearestInt(float32(v*sl2)/slx), -nmax, nmax-1)
				if nl != int(L[i]) {
					fl := float32(nl)
					slx += float32(float32(w*v) * fl)
					sl2 += float32(float32(w*fl) * fl)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i], sumlx, suml2 = int8(nl), slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range L[:len(x)] {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// makeQKX2Quants is ggml's make_qkx2_quants: levels in [0, nmax] with a
// min, searched over nstep+1 scales for the least weighted error (absolute
// if mad, else squared). It returns the scale and -min.
func makeQKX2Quants(nmax int, x, weights []float32, L, aux []uint8, rmin, rdelta float32, nstep int, mad bool) (scale, negMin float32) {
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < len(x); i++ {
		lo, hi = min(lo, x[i]), max(hi, x[i])
		sumW += weights[i]
		sumX += float32(weights[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L[:len(x)])
		return 0, -lo
	}
	fn := float32(nmax)
	errOf := func(d float32) float32 {
		if mad {
			return abs32(d)
		}
		return d * d
	}
	iscale := fn / (hi - lo)
	scale = 1 / iscale
	var best float32
	for i, v := range x {
		l := clampInt(nearestInt(iscale*(v-lo)), 0, nmax)
		L[i] = uint8(l)
		diff := float32(float32(scale*float32(l))+lo) - v
		best += float32(weights[i] * errOf(diff))
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(rmin+float32(rdelta*float32(is))+fn) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampInt(nearestInt(iscale*(v-lo)), 0, nmax)
			aux[i] = uint8(l)
			w, fl := weights[i], float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var cur float32
			for i, v := range x {
				diff := float32(float32(thisScale*float32(aux[i]))+thisMin) - v
				cur += float32(weights[i] * errOf(diff))
			}
			if cur < best {
				copy(L[:len(x)], aux[:len(x)])
				best, scale, lo = cur, thisScale, thisMin
			}
		}
	}
	return scale, -lo
}

// Q2_K: sixteen 16-element groups, 2-bit levels with a min each; their
// scales and mins quantized to 4 bits against d and dmin.
func quantizeQ2K(src []float32, dst []byte) {
	var L, aux [qkK]uint8
	var weights [16]float32
	var scales, mins [16]float32
	for b := range len(src) / qkK {
		x, out := src[b*qkK:(b+1)*qkK], dst[b*84:(b+1)*84]
		var maxScale, maxMin float32
		for j := range 16 {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2Quants(3, xs, weights[:], L[16*j:], aux[:], -0.5, 0.1, 15, true)
			maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
		}
		sc := out[:16]
		clear(sc)
		if maxScale > 0 {
			iscale := 15 / maxScale
			for j := range 16 {
				sc[j] = uint8(nearestInt(iscale * scales[j]))
			}
		}
		putHalf(out[80:], maxScale/15)
		if maxMin > 0 {
			iscale := 15 / maxMin
			for j := range 16 {
				sc[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
			}
		}
		putHalf(out[82:], maxMin/15)
		d, dmin := half(out[80:]), half(out[82:])
		for j := range 16 {
			dl := d * float32(sc[j]&0xf)
			if dl == 0 {
				continue
			}
			ml := dmin * float32(sc[j]>>4)
			for i, v := range x[16*j : 16*j+16] {
				L[16*j+i] = uint8(clampInt(nearestInt((v+ml)/dl), 0, 3))
			}
		}
		pack2(L[:], out[16:80])
	}
}

// pack2 stores 2-bit levels as ggml does: byte l of each 32-byte run holds
// levels l, l+32, l+64 and l+96 of its 128 values.
func pack2[T uint8 | int8](L []T, qs []byte) {
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			qs[j/4+l] = byte(L[j+l]) | byte(L[j+l+32])<<2 | byte(L[j+l+64])<<4 | byte(L[j+l+96])<<6
		}
	}
}

// Q3_K: sixteen 16-element groups of symmetric 3-bit levels; 6-bit group
// scales against d; the third bit of each level in hmask.
func quantizeQ3K(src []float32, dst []byte) {
	var L [qkK]int8
	var scales [16]float32
	for b := range len(src) / qkK {
		x, out := src[b*qkK:(b+1)*qkK], dst[b*110:(b+1)*110]
		var maxScale, amax float32
		for j := range 16 {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		sc := out[96:108]
		clear(sc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range 16 {
				l := int8(nearestInt(iscale * scales[j]))
				l = int8(clampInt(int(l), -32, 31)) + 32
				if j < 8 {
					sc[j] = byte(l) & 0xf
				} else {
					sc[j-8] |= (byte(l) & 0xf) << 4
				}
				l >>= 4
				sc[j%4+8] |= byte(l) << (2 * uint(j/4))
			}
			putHalf(out[108:], 1/iscale)
		} else {
			putHalf(out[108:], 0)
		}
		d := half(out[108:])
		for j := range 16 {
			var s int8
			if j < 8 {
				s = int8(sc[j] & 0xf)
			} else {
				s = int8(sc[j-8] >> 4)
			}
			s = (s | int8((sc[8+j%4]>>(2*uint(j/4)))&3)<<4) - 32
			dl := d * float32(s)
			if dl == 0 {
				continue
			}
			for i, v := range x[16*j : 16*j+16] {
				L[16*j+i] = int8(clampInt(nearestInt(v/dl), -4, 3) + 4)
			}
		}
		hm := out[:32]
		clear(hm)
		m, bit := 0, byte(1)
		for j := range qkK {
			if L[j] > 3 {
				hm[m] |= bit
				L[j] -= 4
			}
			if m++; m == 32 {
				m, bit = 0, bit<<1
			}
		}
		pack2(L[:], out[32:96])
	}
}

// kScaleWeights fills w with ggml's Q4_K/Q5_K_ref weights for a 32-value
// group: the group's RMS plus each value's magnitude.
func kScaleWeights(x, w []float32) {
	var sumX2 float32
	for _, v := range x {
		sumX2 += float32(v * v)
	}
	av := float32(math.Sqrt(float64(sumX2 / 32)))
	for l, v := range x {
		w[l] = av + abs32(v)
	}
}

// quantizeK45 is the shared body of the Q4_K and Q5_K quantizers: eight
// 32-element groups with a scale and a min, both quantized to 6 bits
// against d and dmin (ggml's packed 12-byte layout); levels in [0, nmax].
func quantizeK45(x []float32, out []byte, nmax int, rmin, rdelta float32, nstep int, L []uint8) {
	var aux [32]uint8
	var weights, scales, mins [32]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		kScaleWeights(xs, weights[:])
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:], aux[:], rmin, rdelta, nstep, false)
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := out[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j], sc[j+4] = ls, lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putHalf(out, maxScale/63)
	putHalf(out[2:], maxMin/63)
	d, dmin := half(out), half(out[2:])
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		dl := d * float32(s)
		if dl == 0 {
			continue
		}
		ml := dmin * float32(m)
		for i, v := range x[32*j : 32*j+32] {
			L[32*j+i] = uint8(clampInt(nearestInt((v+ml)/dl), 0, nmax))
		}
	}
}

// Q4_K: d, dmin, scales[12], qs[128] (low nibbles: values 0..31 of each 64).
func quantizeQ4K(src []float32, dst []byte) {
	var L [qkK]uint8
	for b := range len(src) / qkK {
		x, out := src[b*qkK:(b+1)*qkK], dst[b*144:(b+1)*144]
		clear(out)
		quantizeK45(x, out, 15, -1, 0.1, 20, L[:])
		q := out[16:]
		for j := 0; j < qkK; j += 64 {
			for l := range 32 {
				q[j/2+l] = L[j+l] | L[j+l+32]<<4
			}
		}
	}
}

// Q5_K: d, dmin, scales[12], qh[32] (fifth bits), qs[128].
func quantizeQ5K(src []float32, dst []byte) {
	var L [qkK]uint8
	for b := range len(src) / qkK {
		x, out := src[b*qkK:(b+1)*qkK], dst[b*176:(b+1)*176]
		clear(out)
		quantizeK45(x, out, 31, -0.5, 0.1, 15, L[:])
		qh, ql := out[16:48], out[48:]
		m1, m2 := byte(1), byte(2)
		for n := 0; n < qkK; n += 64 {
			for j := range 32 {
				l1, l2 := L[n+j], L[n+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[n/2+j] = l1 | l2<<4
			}
			m1, m2 = m1<<2, m2<<2
		}
	}
}

// Q6_K: ql[128], qh[64], scales[16] (int8), d: sixteen 16-element groups of
// symmetric 6-bit levels.
func quantizeQ6K(src []float32, dst []byte) {
	var L [qkK]int8
	var scales [16]float32
	for b := range len(src) / qkK {
		x, out := src[b*qkK:(b+1)*qkK], dst[b*210:(b+1)*210]
		clear(out)
		var maxScale, maxAbs float32
		for ib := range 16 {
			scales[ib] = makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:])
			if a := abs32(scales[ib]); a > maxAbs {
				maxAbs, maxScale = a, scales[ib]
			}
		}
		if maxAbs < groupMaxEps {
			continue
		}
		iscale := -128 / maxScale
		putHalf(out[208:], 1/iscale)
		sc := out[192:208]
		for ib := range 16 {
			sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		d := half(out[208:])
		for j := range 16 {
			dl := d * float32(int8(sc[j]))
			if dl == 0 {
				continue
			}
			for i, v := range x[16*j : 16*j+16] {
				L[16*j+i] = int8(clampInt(nearestInt(v/dl), -32, 31) + 32)
			}
		}
		ql, qh := out[:128], out[128:192]
		for j := 0; j < qkK; j += 128 {
			for l := range 32 {
				q1, q2, q3, q4 := byte(L[j+l]), byte(L[j+l+32]), byte(L[j+l+64]), byte(L[j+l+96])
				ql[j/2+l] = q1&0xf | (q3&0xf)<<4
				ql[j/2+l+32] = q2&0xf | (q4&0xf)<<4
				qh[j/4+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
}
