package cpu

import (
	"encoding/binary"

	"github.com/batchd/batchd/quant"
)

// SIMD dequantizers for the formats without fused kernels (dequant_amd64.s):
// the block scales are worked out here exactly as package quant works them
// out, the values in assembly.

func f16(b []byte) float32 { return quant.F16ToF32(binary.LittleEndian.Uint16(b)) }

func blocks32(kern func(src *byte, dst *float32, nblocks int)) func(src []byte, dst []float32) {
	return func(src []byte, dst []float32) {
		if n := len(dst) / 32; n > 0 {
			kern(&src[0], &dst[0], n)
		}
	}
}

// dequantIQ4NLAVX2 takes the blocks 64 at a time, their scales on the stack.
func dequantIQ4NLAVX2(src []byte, dst []float32) {
	var sc [64]float32
	nb := len(dst) / 32
	for b0 := 0; b0 < nb; b0 += len(sc) {
		k := min(len(sc), nb-b0)
		for i := range k {
			sc[i] = f16(src[18*(b0+i):])
		}
		gridRunAVX2(&src[18*b0+2], 18, &sc[0], k, &dst[32*b0], &quant.IQ4Grid[0])
	}
}

// dequantMXFP4AVX2: each block's E8M0 scale made a float (exactly, a power
// of two), its nibbles through MXFP4's grid as IQ4_NL's go through theirs.
func dequantMXFP4AVX2(src []byte, dst []float32) {
	var sc [64]float32
	nb := len(dst) / 32
	for b0 := 0; b0 < nb; b0 += len(sc) {
		k := min(len(sc), nb-b0)
		for i := range k {
			sc[i] = quant.E8MHalf(src[17*(b0+i)])
		}
		gridRunAVX2(&src[17*b0+1], 17, &sc[0], k, &dst[32*b0], &quant.MXFP4Grid[0])
	}
}

func dequantIQ4XSAVX2(src []byte, dst []float32) {
	var sc [8]float32
	for b := range len(dst) / 256 {
		blk := src[b*136:]
		d := f16(blk)
		for ib := range 8 {
			sc[ib] = d * float32(quant.IQ4XSScale(blk, ib))
		}
		gridRunAVX2(&blk[8], 16, &sc[0], 8, &dst[b*256], &quant.IQ4Grid[0])
	}
}

func dequantQ2KAVX2(src []byte, dst []float32) {
	var dl, ml [16]float32
	for b := range len(dst) / 256 {
		blk := src[b*84:]
		d, dmin := f16(blk[80:]), f16(blk[82:])
		for g, sc := range blk[:16] {
			dl[g], ml[g] = d*float32(sc&0xf), dmin*float32(sc>>4)
		}
		q2kAVX2(&blk[16], &dl[0], &ml[0], &dst[b*256])
	}
}

func dequantQ3KAVX2(src []byte, dst []float32) {
	var dl [16]float32
	for b := range len(dst) / 256 {
		blk := src[b*110:]
		d := f16(blk[108:])
		for j, s := range quant.Q3KScales(blk) {
			dl[j] = d * float32(s)
		}
		q3kAVX2(&blk[32], &blk[0], &dl[0], &dst[b*256])
	}
}

func dequantBF16AVX2(src []byte, dst []float32) {
	n := len(dst) &^ 7
	if n > 0 {
		bf16RunAVX2(&src[0], &dst[0], n)
	}
	if n < len(dst) {
		quant.Lookup(quant.BF16).Dequantize(src[2*n:], dst[n:])
	}
}
