package cpu

import "github.com/batchd/batchd/quant"

// simdDequant returns the SIMD dequantizer of a format, where there is one:
// bit-identical to quant's (TestSIMDDequantMatchesQuant), so the tile path
// gives the same sums whichever ran.
func simdDequant(t quant.DType) func(src []byte, dst []float32) {
	switch t {
	case quant.Q4_K:
		return dequantQ4KAVX2
	case quant.Q6_K:
		return dequantQ6KAVX2
	case quant.Q5_K:
		return dequantQ5KAVX2
	case quant.Q4_0:
		return blocks32(q40BlocksAVX2)
	case quant.Q4_1:
		return blocks32(q41BlocksAVX2)
	case quant.Q5_0:
		return blocks32(q50BlocksAVX2)
	case quant.Q5_1:
		return blocks32(q51BlocksAVX2)
	case quant.IQ4_NL:
		return dequantIQ4NLAVX2
	case quant.MXFP4:
		return dequantMXFP4AVX2
	case quant.IQ4_XS:
		return dequantIQ4XSAVX2
	case quant.Q2_K:
		return dequantQ2KAVX2
	case quant.Q3_K:
		return dequantQ3KAVX2
	case quant.BF16:
		return dequantBF16AVX2
	}
	return nil
}

func dequantQ4KAVX2(src []byte, dst []float32) {
	var ds, ms [8]float32
	for b := range len(dst) / 256 {
		blk, y := src[b*144:], dst[b*256:]
		quant.K4Scales(blk, &ds, &ms)
		for p := range 4 {
			q4kPairAVX2(&blk[16+32*p], ds[2*p], ms[2*p], ds[2*p+1], ms[2*p+1], &y[64*p])
		}
	}
}

func dequantQ6KAVX2(src []byte, dst []float32) {
	var sc [16]float32
	for b := range len(dst) / 256 {
		blk, y := src[b*210:], dst[b*256:]
		quant.Q6KScales(blk, &sc)
		q6kHalfAVX2(&blk[0], &blk[128], &sc[0], &y[0])
		q6kHalfAVX2(&blk[64], &blk[160], &sc[8], &y[128])
	}
}

func dequantQ5KAVX2(src []byte, dst []float32) {
	var ds, ms [8]float32
	for b := range len(dst) / 256 {
		blk, y := src[b*176:], dst[b*256:]
		quant.K4Scales(blk, &ds, &ms)
		for p := range 4 {
			q5kPairAVX2(&blk[48+32*p], &blk[16], 2*p, ds[2*p], ms[2*p], ds[2*p+1], ms[2*p+1], &y[64*p])
		}
	}
}
