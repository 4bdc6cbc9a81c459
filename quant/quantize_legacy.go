package quant

import (
	"encoding/binary"
	"math"
)

// Reference quantizers (ggml's quantize_row_*_ref), so that the model
// writer can produce these formats; files for tests of exactness come from
// llama.cpp's own llama-quantize.
func init() {
	formats[BF16].Quantize = quantizeBF16
	formats[Q4_0].Quantize = quantizeQ4_0
	formats[Q4_1].Quantize = quantizeQ4_1
	formats[Q5_0].Quantize = quantizeQ5_0
	formats[Q5_1].Quantize = quantizeQ5_1
}

// quantizeBF16 rounds to nearest even; NaNs stay quiet NaNs.
func quantizeBF16(src []float32, dst []byte) {
	for i, v := range src {
		u := math.Float32bits(v)
		var h uint16
		if u&0x7fffffff > 0x7f800000 {
			h = uint16(u>>16) | 64
		} else {
			h = uint16((u + (0x7fff + (u>>16)&1)) >> 16)
		}
		binary.LittleEndian.PutUint16(dst[2*i:], h)
	}
}

func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func inv(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

func quantizeQ4_0(src []float32, dst []byte) {
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*18:]
		m, _ := signedAbsMax(x)
		d := m / -8
		id := inv(d)
		putHalf(out, d)
		for j := range 16 {
			q0 := min(15, int8(x[j]*id+8.5))
			q1 := min(15, int8(x[j+16]*id+8.5))
			out[2+j] = byte(q0) | byte(q1)<<4
		}
	}
}

func quantizeQ4_1(src []float32, dst []byte) {
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*20:]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		id := inv(d)
		putHalf(out, d)
		putHalf(out[2:], lo)
		for j := range 16 {
			q0 := min(15, int8((x[j]-lo)*id+0.5))
			q1 := min(15, int8((x[j+16]-lo)*id+0.5))
			out[4+j] = byte(q0) | byte(q1)<<4
		}
	}
}

func quantizeQ5_0(src []float32, dst []byte) {
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*22:]
		m, _ := signedAbsMax(x)
		d := m / -16
		id := inv(d)
		putHalf(out, d)
		var qh uint32
		for j := range 16 {
			q0 := byte(min(31, int8(x[j]*id+16.5)))
			q1 := byte(min(31, int8(x[j+16]*id+16.5)))
			out[6+j] = q0&0x0f | (q1&0x0f)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(out[2:], qh)
	}
}

func quantizeQ5_1(src []float32, dst []byte) {
	for b := range len(src) / 32 {
		x, out := src[b*32:(b+1)*32], dst[b*24:]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		id := inv(d)
		putHalf(out, d)
		putHalf(out[2:], lo)
		var qh uint32
		for j := range 16 {
			q0 := byte(min(31, int8((x[j]-lo)*id+0.5)))
			q1 := byte(min(31, int8((x[j+16]-lo)*id+0.5)))
			out[8+j] = q0&0x0f | (q1&0x0f)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(out[4:], qh)
	}
}
