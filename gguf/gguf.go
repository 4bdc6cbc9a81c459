package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// GGUF value types.
const (
	ggufU8 uint32 = iota
	ggufI8
	ggufU16
	ggufI16
	ggufU32
	ggufI32
	ggufF32
	ggufBool
	ggufString
	ggufArray
	ggufU64
	ggufI64
	ggufF64
)

const Magic = "GGUF"

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// Tensor describes one tensor of a GGUF file.
type Tensor struct {
	Name   string
	Dims   []uint64 // ggml order: Dims[0] is the contiguous (column) axis
	Type   Type
	Offset uint64 // from the start of the data section
	Size   uint64 // bytes, when Type is one ggml defines
}

// File is a parsed GGUF header: metadata, tensor directory and where the data starts.
type File struct {
	Version    uint32
	Meta       map[string]any // scalars as Go values; arrays as typed slices
	Tensors    []Tensor
	DataOffset uint64
}

// parser reads little-endian values from a byte slice and fails, never panics,
// when the slice runs out.
type parser struct {
	b   []byte
	off uint64
	err error
}

func (p *parser) need(n uint64) bool {
	if p.err != nil {
		return false
	}
	if n > uint64(len(p.b))-p.off {
		p.err = malformed("truncated at byte %d (need %d more, file has %d)", p.off, n, len(p.b))
		return false
	}
	return true
}

func (p *parser) bytes(n uint64) []byte {
	if !p.need(n) {
		return nil
	}
	v := p.b[p.off : p.off+n]
	p.off += n
	return v
}

func (p *parser) u8() uint8 {
	if b := p.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (p *parser) u16() uint16 {
	if b := p.bytes(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (p *parser) u32() uint32 {
	if b := p.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (p *parser) u64() uint64 {
	if b := p.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (p *parser) str() string {
	n := p.u64()
	return string(p.bytes(n))
}

// count reads an element count and checks that that many elements of at least
// minSize bytes could still fit, so a hostile count cannot make us allocate.
func (p *parser) count(what string, minSize uint64) uint64 {
	n := p.u64()
	if p.err == nil && minSize > 0 && n > (uint64(len(p.b))-p.off)/minSize {
		p.err = malformed("%s count %d exceeds what the file can hold", what, n)
		return 0
	}
	return n
}

func ggufScalarSize(t uint32) uint64 {
	switch t {
	case ggufU8, ggufI8, ggufBool:
		return 1
	case ggufU16, ggufI16:
		return 2
	case ggufU32, ggufI32, ggufF32:
		return 4
	case ggufU64, ggufI64, ggufF64:
		return 8
	case ggufString:
		return 8 // at least the length
	}
	return 0
}

func (p *parser) scalar(t uint32) any {
	switch t {
	case ggufU8:
		return p.u8()
	case ggufI8:
		return int8(p.u8())
	case ggufU16:
		return p.u16()
	case ggufI16:
		return int16(p.u16())
	case ggufU32:
		return p.u32()
	case ggufI32:
		return int32(p.u32())
	case ggufF32:
		return math.Float32frombits(p.u32())
	case ggufBool:
		return p.u8() != 0
	case ggufString:
		return p.str()
	case ggufU64:
		return p.u64()
	case ggufI64:
		return int64(p.u64())
	case ggufF64:
		return math.Float64frombits(p.u64())
	}
	if p.err == nil {
		p.err = malformed("unknown metadata value type %d at byte %d", t, p.off)
	}
	return nil
}

func (p *parser) value(t uint32, depth int) any {
	if t != ggufArray {
		return p.scalar(t)
	}
	et := p.u32()
	if et == ggufArray && depth > 0 {
		p.err = malformed("nested metadata arrays")
		return nil
	}
	size := ggufScalarSize(et)
	if et == ggufArray {
		size = 12
	}
	if size == 0 && p.err == nil {
		p.err = malformed("unknown array element type %d", et)
		return nil
	}
	n := p.count("array", size)
	switch et {
	case ggufString:
		out := make([]string, 0, n)
		for range n {
			out = append(out, p.str())
		}
		return out
	case ggufF32:
		out := make([]float32, 0, n)
		for range n {
			out = append(out, math.Float32frombits(p.u32()))
		}
		return out
	case ggufI32:
		out := make([]int32, 0, n)
		for range n {
			out = append(out, int32(p.u32()))
		}
		return out
	}
	out := make([]any, 0, n)
	for i := uint64(0); i < n && p.err == nil; i++ {
		out = append(out, p.value(et, depth+1))
	}
	return out
}

// Parse parses the header and tensor directory of a GGUF v2 or v3 file
// held in b and checks that every tensor lies inside b. It does not copy
// tensor data.
func Parse(b []byte) (*File, error) {
	p := &parser{b: b}
	if magic := p.bytes(4); p.err != nil || string(magic) != Magic {
		return nil, malformed("bad magic %q, want %q", magic, Magic)
	}
	f := &File{Version: p.u32(), Meta: map[string]any{}}
	if p.err == nil && (f.Version < 2 || f.Version > 3) {
		return nil, fmt.Errorf("%w: GGUF version %d (want 2 or 3)", ErrUnsupported, f.Version)
	}
	nTensors := p.count("tensor", 8+4+8+4+8)
	nKV := p.count("metadata", 8+4+1)
	for i := uint64(0); i < nKV && p.err == nil; i++ {
		key := p.str()
		f.Meta[key] = p.value(p.u32(), 0)
	}
	for i := uint64(0); i < nTensors && p.err == nil; i++ {
		t := Tensor{Name: p.str()}
		nd := p.u32()
		if p.err == nil && (nd == 0 || nd > 4) {
			p.err = malformed("tensor %q has %d dimensions", t.Name, nd)
			break
		}
		for range nd {
			t.Dims = append(t.Dims, p.u64())
		}
		t.Type = Type(p.u32())
		t.Offset = p.u64()
		f.Tensors = append(f.Tensors, t)
	}
	if p.err != nil {
		return nil, p.err
	}
	align := uint64(DefaultAlignment)
	if v, ok := f.Meta["general.alignment"]; ok {
		a, ok := v.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return nil, malformed("general.alignment %v is not a power of two", v)
		}
		align = uint64(a)
	}
	f.DataOffset = (p.off + align - 1) / align * align
	if len(f.Tensors) == 0 && f.DataOffset > uint64(len(b)) {
		// A file without tensors (a vocabulary-only GGUF, as llama.cpp's
		// models/ggml-vocab-*.gguf) ends with its metadata, unpadded.
		f.DataOffset = uint64(len(b))
	}
	if f.DataOffset > uint64(len(b)) {
		return nil, malformed("data section starts at %d past the end (%d bytes)", f.DataOffset, len(b))
	}
	dataLen := uint64(len(b)) - f.DataOffset
	for i := range f.Tensors {
		t := &f.Tensors[i]
		elems := uint64(1)
		for _, d := range t.Dims {
			if d == 0 || d > 1<<40 || elems > (1<<62)/d {
				return nil, malformed("tensor %q has dims %v", t.Name, t.Dims)
			}
			elems *= d
		}
		rb := t.Type.RowBytes(int(t.Dims[0]))
		if rb == -2 {
			continue // a type ggml does not define: size unknown; a loader reports the type
		}
		if rb < 0 {
			return nil, malformed("tensor %q: %s row of %d elements", t.Name, t.Type, t.Dims[0])
		}
		t.Size = uint64(rb) * (elems / t.Dims[0])
		if t.Offset%align != 0 {
			return nil, malformed("tensor %q offset %d not aligned to %d", t.Name, t.Offset, align)
		}
		if t.Offset > dataLen || t.Size > dataLen-t.Offset {
			return nil, malformed("tensor %q (%d bytes at %d) runs past the end of the file", t.Name, t.Size, t.Offset)
		}
	}
	return f, nil
}

// Tensor returns the named tensor's directory entry.
func (f *File) Tensor(name string) (*Tensor, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// MetaUint returns an integer metadata value of any integer type.
func (f *File) MetaUint(key string) (uint64, bool) {
	switch v := f.Meta[key].(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8:
		return uint64(v), v >= 0
	case int16:
		return uint64(v), v >= 0
	case int32:
		return uint64(v), v >= 0
	case int64:
		return uint64(v), v >= 0
	}
	return 0, false
}

// MetaFloat returns a float metadata value.
func (f *File) MetaFloat(key string) (float64, bool) {
	switch v := f.Meta[key].(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// MetaString returns a string metadata value.
func (f *File) MetaString(key string) (string, bool) {
	v, ok := f.Meta[key].(string)
	return v, ok
}
