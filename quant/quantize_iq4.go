package quant

import "encoding/binary"

// Reference quantizers for IQ4_NL and IQ4_XS, following ggml's
// quantize_row_iq4_nl_impl as llama-quantize calls it without an importance
// matrix (weights x², seven trial scales either side).
func init() {
	formats[IQ4_NL].Quantize = quantizeIQ4NL
	formats[IQ4_XS].Quantize = quantizeIQ4XS
}

// bestIndexIQ4 returns the grid index nearest x (ties to the upper one),
// by ggml's bisection.
func bestIndexIQ4(x float32) uint8 {
	v := &IQ4Grid
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

const iq4Tries = 7

// iq4BlockScale fits one 32-value block's scale: the largest magnitude
// mapped to the grid's end, then 15 trial scales, keeping the one whose
// weighted least-squares fit explains most. L gets the first fit's indices.
func iq4BlockScale(xb []float32, L []uint8) float32 {
	m, amax := signedAbsMax(xb)
	if amax < groupMaxEps {
		return 0
	}
	v0 := float32(IQ4Grid[0])
	d := -m / v0
	id := 1 / d
	var sumqx, sumq2 float32
	for j, x := range xb {
		l := bestIndexIQ4(id * x)
		L[j] = l
		q, w := float32(IQ4Grid[l]), x*x
		sumqx += float32(float32(w*q) * x)
		sumq2 += float32(float32(w*q) * q)
	}
	d = sumqx / sumq2
	best := d * sumqx
	for itry := -iq4Tries; itry <= iq4Tries; itry++ {
		id = float32(itry+int(IQ4Grid[0])) / m
		sumqx, sumq2 = 0, 0
		for _, x := range xb {
			q, w := float32(IQ4Grid[bestIndexIQ4(id*x)]), x*x
			sumqx += float32(float32(w*q) * x)
			sumq2 += float32(float32(w*q) * q)
		}
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// packIQ4 stores indices as ggml does: byte j of each 16-byte run holds
// values j and j+16 of its 32.
func packIQ4(L []uint8, q []byte) {
	for i := range len(L) / 32 {
		for j := range 16 {
			q[16*i+j] = L[32*i+j] | L[32*i+16+j]<<4
		}
	}
}

// IQ4_NL: d, qs[16].
func quantizeIQ4NL(src []float32, dst []byte) {
	var L [32]uint8
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*18:(b+1)*18]
		d := iq4BlockScale(x, L[:])
		putHalf(out, d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		for j, v := range x {
			L[j] = bestIndexIQ4(id * v)
		}
		packIQ4(L[:], out[2:])
	}
}

// IQ4_XS: d, scales_h, scales_l[4], qs[128]: eight blocks whose scales are
// quantized to 6 bits against d.
func quantizeIQ4XS(src []float32, dst []byte) {
	var L [qkK]uint8
	var scales [8]float32
	for b := range len(src) / qkK {
		x, out := src[b*qkK:(b+1)*qkK], dst[b*136:(b+1)*136]
		clear(out)
		var maxScale, amax float32
		for ib := range 8 {
			scales[ib] = iq4BlockScale(x[32*ib:32*ib+32], L[32*ib:])
			if a := abs32(scales[ib]); a > amax {
				amax, maxScale = a, scales[ib]
			}
		}
		d := -maxScale / 32
		putHalf(out, d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sh uint16
		sl := out[4:8]
		for ib := range 8 {
			l := clampInt(nearestInt(id*scales[ib]), -32, 31)
			dl := d * float32(l)
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			for j, v := range x[32*ib : 32*ib+32] {
				L[32*ib+j] = bestIndexIQ4(idl * v)
			}
			l += 32
			sl[ib/2] |= byte(l&0xf) << (4 * uint(ib%2))
			sh |= uint16(l>>4) << (2 * uint(ib))
		}
		binary.LittleEndian.PutUint16(out[2:], sh)
		packIQ4(L[:], out[8:])
	}
}

// QuantizeIQ4NLRowRef writes src as IQ4_NL blocks as ggml's
// quantize_row_iq4_nl_ref does (what its CPU backend stores in an IQ4_NL
// tensor, a KV cache's): no trial scales, the indices of the first fit
// (the largest magnitude at the grid's first value) kept, and the block's
// least-squares scale for them (weights x²).
func QuantizeIQ4NLRowRef(src []float32, dst []byte) {
	var L [32]uint8
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*18:(b+1)*18]
		clear(out)
		m, amax := signedAbsMax(x)
		if amax < groupMaxEps {
			continue
		}
		id := 1 / (m / float32(IQ4Grid[0]))
		var sumqx, sumq2 float32
		for j, v := range x {
			L[j] = bestIndexIQ4(id * v)
			q, w := float32(IQ4Grid[L[j]]), v*v
			sumqx += float32(float32(w*q) * v)
			sumq2 += float32(float32(w*q) * q)
		}
		var d float32
		if sumq2 > 0 {
			d = sumqx / sumq2
		}
		putHalf(out, d)
		packIQ4(L[:], out[2:])
	}
}
