package quant

import (
	"encoding/binary"
	"math"
)

func init() {
	register(&Format{Type: F32, BlockElems: 1, BlockBytes: 4,
		Dequantize: func(src []byte, dst []float32) {
			for i := range dst {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		},
		Quantize: func(src []float32, dst []byte) {
			for i, v := range src {
				binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
			}
		}})
	register(&Format{Type: F16, BlockElems: 1, BlockBytes: 2,
		Dequantize: func(src []byte, dst []float32) {
			for i := range dst {
				dst[i] = f16Table[binary.LittleEndian.Uint16(src[2*i:])]
			}
		},
		Quantize: func(src []float32, dst []byte) {
			for i, v := range src {
				binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
			}
		}})
}

// f16Table maps every IEEE half bit pattern to its float32 value.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = halfToFloat(uint16(i))
	}
	return &t
}()

// F16Table returns the half-to-float table, for kernels that index it.
func F16Table() *[1 << 16]float32 { return f16Table }

// F16ToF32 converts an IEEE 754 half to float32.
func F16ToF32(h uint16) float32 { return f16Table[h] }

func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		return float32(math.Ldexp(float64(frac), -24)) * float32(1-2*int(h>>15))
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// F32ToF16 converts float32 to the nearest IEEE 754 half (ties to even).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	frac := b & 0x7fffff
	if b&0x7fffffff >= 0x7f800000 { // inf or nan
		if frac != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	if exp >= 0x1f {
		return sign | 0x7c00
	}
	if exp <= 0 {
		if exp < -10 {
			return sign
		}
		frac |= 0x800000
		shift := uint(14 - exp)
		half := uint32(1) << (shift - 1)
		rest := frac & (1<<shift - 1)
		v := frac >> shift
		if rest > half || (rest == half && v&1 == 1) {
			v++
		}
		return sign | uint16(v)
	}
	v := uint32(exp)<<10 | frac>>13
	rest := frac & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && v&1 == 1) {
		v++ // may carry into the exponent, which is the right rounding
	}
	return sign | uint16(v)
}
