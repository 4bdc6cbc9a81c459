package model

import (
	"fmt"
	"math"
	"unsafe"
)

// DType is a tensor element type, numbered as GGUF (ggml) numbers them.
type DType uint32

// The element types batchd computes with.
const (
	F32  DType = 0
	F16  DType = 1
	Q8_0 DType = 8
)

// Q8Block is the number of weights sharing one scale in Q8_0.
const Q8Block = 32

// q8BlockBytes is an fp16 scale followed by 32 int8 values.
const q8BlockBytes = 2 + Q8Block

var dtypeNames = map[DType]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S",
	22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
	29: "IQ1_M", 30: "BF16",
}

func (t DType) String() string {
	if s, ok := dtypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// ParseDType parses a type name such as "f32", "F16" or "q8_0".
func ParseDType(s string) (DType, error) {
	switch s {
	case "f32", "F32":
		return F32, nil
	case "f16", "F16":
		return F16, nil
	case "q8_0", "Q8_0":
		return Q8_0, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want f32, f16 or q8_0)", s)
}

// Supported reports whether batchd can compute with weights of this type.
func (t DType) Supported() bool { return t == F32 || t == F16 || t == Q8_0 }

// RowBytes returns the bytes of one row of n elements, or -1 if n does not
// fit the type's block size.
func (t DType) RowBytes(n int) int {
	switch t {
	case F32:
		return 4 * n
	case F16:
		return 2 * n
	case Q8_0:
		if n%Q8Block != 0 {
			return -1
		}
		return n / Q8Block * q8BlockBytes
	}
	return -1
}

// Matrix is a row-major weight matrix of Rows rows of Cols elements; each row
// is one output feature. Data may be memory-mapped and is never written.
type Matrix struct {
	Type       DType
	Rows, Cols int
	Data       []byte
	f32        []float32 // Data viewed as float32 when Type is F32
	f16        []uint16  // Data viewed as uint16 when Type is F16
}

// NewMatrix wraps data as a Rows x Cols matrix of type t.
func NewMatrix(t DType, rows, cols int, data []byte) (*Matrix, error) {
	rb := t.RowBytes(cols)
	if !t.Supported() || rb < 0 {
		return nil, fmt.Errorf("%w: %s matrix with %d columns", ErrUnsupported, t, cols)
	}
	if len(data) != rows*rb {
		return nil, fmt.Errorf("%s matrix %dx%d wants %d bytes, has %d", t, rows, cols, rows*rb, len(data))
	}
	m := &Matrix{Type: t, Rows: rows, Cols: cols, Data: data}
	switch t {
	case F32:
		m.f32 = bytesAs[float32](data)
	case F16:
		m.f16 = bytesAs[uint16](data)
	}
	return m, nil
}

// Bytes returns the size of the matrix data.
func (m *Matrix) Bytes() int { return len(m.Data) }

// Row dequantizes row r into dst (len Cols).
func (m *Matrix) Row(r int, dst []float32) {
	switch m.Type {
	case F32:
		copy(dst, m.f32[r*m.Cols:(r+1)*m.Cols])
	case F16:
		for i, h := range m.f16[r*m.Cols : (r+1)*m.Cols] {
			dst[i] = f16Table[h]
		}
	case Q8_0:
		rb := m.Type.RowBytes(m.Cols)
		dequantQ8(m.Data[r*rb:(r+1)*rb], dst)
	}
}

// bytesAs reinterprets b as a slice of T. GGUF aligns tensor data to 32 bytes
// and llama2.c files are float32 throughout, so the cast is aligned; an
// unaligned slice (only possible from a hand-made file) is copied instead.
func bytesAs[T float32 | uint16](b []byte) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b) == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%uintptr(size) != 0 {
		c := make([]T, len(b)/size)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&c[0])), len(c)*size), b)
		return c
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
}

// f16Table maps every IEEE half bit pattern to its float32 value.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = halfToFloat(uint16(i))
	}
	return &t
}()

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

// QuantizeQ8 writes src (a multiple of 32 values) as Q8_0 blocks into dst.
func QuantizeQ8(src []float32, dst []byte) {
	for b := 0; b < len(src)/Q8Block; b++ {
		x := src[b*Q8Block : (b+1)*Q8Block]
		out := dst[b*q8BlockBytes : (b+1)*q8BlockBytes]
		var amax float32
		for _, v := range x {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		h := F32ToF16(d)
		out[0], out[1] = byte(h), byte(h>>8)
		for i, v := range x {
			out[2+i] = byte(int8(math.Round(float64(v * id))))
		}
	}
}

func dequantQ8(src []byte, dst []float32) {
	for b := 0; b < len(dst)/Q8Block; b++ {
		blk := src[b*q8BlockBytes : (b+1)*q8BlockBytes]
		d := f16Table[uint16(blk[0])|uint16(blk[1])<<8]
		for i := range Q8Block {
			dst[b*Q8Block+i] = d * float32(int8(blk[2+i]))
		}
	}
}
