package model

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/batchd/batchd/quant"
)

// Matrix is a row-major weight matrix of Rows rows of Cols elements; each row
// is one output feature. Data may be memory-mapped and is never written.
type Matrix struct {
	Type       quant.DType
	Rows, Cols int
	Data       []byte
	f32        []float32              // Data viewed as float32 when Type is F32
	f16        []uint16               // Data viewed as uint16 when Type is F16
	packed     atomic.Pointer[[]byte] // a backend's layout of Data (repack.go): set while other backends may run
}

// NewMatrix wraps data as a Rows x Cols matrix of type t.
func NewMatrix(t quant.DType, rows, cols int, data []byte) (*Matrix, error) {
	rb := t.RowBytes(cols)
	if !t.Supported() || rb < 0 {
		return nil, fmt.Errorf("%w: %s matrix with %d columns", ErrUnsupported, t, cols)
	}
	if len(data) != rows*rb {
		return nil, fmt.Errorf("%s matrix %dx%d wants %d bytes, has %d", t, rows, cols, rows*rb, len(data))
	}
	m := &Matrix{Type: t, Rows: rows, Cols: cols, Data: data}
	switch t {
	case quant.F32:
		m.f32 = bytesAs[float32](data)
	case quant.F16:
		m.f16 = bytesAs[uint16](data)
	}
	return m, nil
}

// F32 returns the data as float32 values (Type F32), shared, read-only.
func (m *Matrix) F32() []float32 { return m.f32 }

// F16 returns the data as IEEE half bit patterns (Type F16), shared, read-only.
func (m *Matrix) F16() []uint16 { return m.f16 }

// Bytes returns the size of the matrix data (0 for nil).
func (m *Matrix) Bytes() int {
	if m == nil {
		return 0
	}
	return len(m.Data)
}

// Row dequantizes row r into dst (len Cols).
func (m *Matrix) Row(r int, dst []float32) {
	switch m.Type {
	case quant.F32:
		copy(dst, m.f32[r*m.Cols:(r+1)*m.Cols])
	case quant.F16:
		for i, h := range m.f16[r*m.Cols : (r+1)*m.Cols] {
			dst[i] = f16Table[h]
		}
	default:
		rb := m.Type.RowBytes(m.Cols)
		quant.Lookup(m.Type).Dequantize(m.Data[r*rb:(r+1)*rb], dst)
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

// f16Table is quant's half-to-float table, indexed in the F16 loops here.
var f16Table = quant.F16Table()

// RowRange returns rows [lo, hi) as a matrix sharing m's data: the Q, K and V
// (or gate and up) parts of a fused matrix.
func (m *Matrix) RowRange(lo, hi int) *Matrix {
	rb := m.Type.RowBytes(m.Cols)
	sub, err := NewMatrix(m.Type, hi-lo, m.Cols, m.Data[lo*rb:hi*rb])
	if err != nil {
		panic(err) // the same type and columns as m: cannot fail
	}
	return sub
}
