package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Writer writes a GGUF v3 file: metadata in insertion order, then tensors
// aligned to 32 bytes. It is how testing/modelgen and tests make model files.
type Writer struct {
	keys    []string
	meta    map[string]any
	tensors []writerTensor
}

type writerTensor struct {
	name string
	dims []uint64
	typ  Type
	data []byte
	hole uint64 // bytes left as a hole instead of data (AddTensorHole)
}

// NewWriter returns an empty writer.
func NewWriter() *Writer { return &Writer{meta: map[string]any{}} }

// NewWriterFrom returns a writer holding f's metadata (the keys whose
// types Set takes) and its tensors, data shared with the file's bytes: a
// file to edit and write again.
func NewWriterFrom(f *File, data []byte) *Writer {
	w := NewWriter()
	for _, k := range f.SortedKeys() {
		switch v := f.Meta[k].(type) {
		case string, bool, uint32, int32, uint64, float32, []string, []float32, []int32:
			w.Set(k, v)
		}
	}
	for _, t := range f.Tensors {
		start := f.DataOffset + t.Offset
		w.AddTensor(t.Name, t.Type, t.Dims, data[start:start+t.Size])
	}
	return w
}

// Set adds a metadata key. Values may be string, bool, uint32, int32, uint64,
// float32, []string, []float32 or []int32.
func (w *Writer) Set(key string, v any) {
	if _, ok := w.meta[key]; !ok {
		w.keys = append(w.keys, key)
	}
	w.meta[key] = v
}

// AddTensor adds a tensor with ggml-order dims (dims[0] contiguous) and raw data.
func (w *Writer) AddTensor(name string, typ Type, dims []uint64, data []byte) {
	w.tensors = append(w.tensors, writerTensor{name: name, dims: dims, typ: typ, data: data})
}

// AddTensorHole adds a tensor whose size bytes of data are left as a hole
// in the file (zeros that take no disk): files with a real model's tensor
// directory, for tests of loading. WriteTo then needs an *os.File.
func (w *Writer) AddTensorHole(name string, typ Type, dims []uint64, size uint64) {
	w.tensors = append(w.tensors, writerTensor{name: name, dims: dims, typ: typ, hole: size})
}

// RemoveTensor drops a tensor added before (tests write files missing one).
func (w *Writer) RemoveTensor(name string) {
	for i, t := range w.tensors {
		if t.name == name {
			w.tensors = append(w.tensors[:i], w.tensors[i+1:]...)
			return
		}
	}
}

// SetTensorType changes the type recorded for the i'th tensor added (its
// data is kept as is; tests write files with wrong types).
func (w *Writer) SetTensorType(i int, t Type) { w.tensors[i].typ = t }

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	le := binary.LittleEndian
	put := func(v any) { _ = binary.Write(cw, le, v) }
	putStr := func(s string) { put(uint64(len(s))); _, _ = io.WriteString(cw, s) }

	_, _ = io.WriteString(cw, Magic)
	put(uint32(3))
	put(uint64(len(w.tensors)))
	put(uint64(len(w.keys)))
	for _, k := range w.keys {
		putStr(k)
		if err := putValue(put, putStr, w.meta[k]); err != nil {
			return cw.n, fmt.Errorf("gguf: metadata %q: %w", k, err)
		}
	}
	var off uint64
	for _, t := range w.tensors {
		putStr(t.name)
		put(uint32(len(t.dims)))
		put(t.dims)
		put(uint32(t.typ))
		put(off)
		off = align32(off + uint64(len(t.data)) + t.hole)
	}
	pad := func() { _, _ = cw.Write(make([]byte, align32(uint64(cw.n))-uint64(cw.n))) }
	pad()
	bw := cw.w.(*bufio.Writer)
	for _, t := range w.tensors {
		_, _ = cw.Write(t.data)
		if t.hole > 0 {
			f, ok := out.(*os.File)
			if !ok {
				return cw.n, fmt.Errorf("gguf: tensor %s is a hole: WriteTo needs an *os.File", t.name)
			}
			if err := bw.Flush(); err != nil {
				return cw.n, err
			}
			cw.n += int64(t.hole)
			if err := f.Truncate(cw.n); err != nil {
				return cw.n, err
			}
			if _, err := f.Seek(cw.n, io.SeekStart); err != nil {
				return cw.n, err
			}
		}
		pad()
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}

// putValue writes one metadata value with its type tag.
func putValue(put func(any), putStr func(string), v any) error {
	switch v := v.(type) {
	case string:
		put(ggufString)
		putStr(v)
	case bool:
		put(ggufBool)
		put(v)
	case uint32:
		put(ggufU32)
		put(v)
	case int32:
		put(ggufI32)
		put(v)
	case uint64:
		put(ggufU64)
		put(v)
	case float32:
		put(ggufF32)
		put(math.Float32bits(v))
	case []string:
		put(ggufArray)
		put(ggufString)
		put(uint64(len(v)))
		for _, s := range v {
			putStr(s)
		}
	case []float32:
		put(ggufArray)
		put(ggufF32)
		put(uint64(len(v)))
		put(v)
	case []int32:
		put(ggufArray)
		put(ggufI32)
		put(uint64(len(v)))
		put(v)
	case []bool: // a byte each (gemma4's sliding_window_pattern)
		put(ggufArray)
		put(ggufBool)
		put(uint64(len(v)))
		put(v)
	default:
		return fmt.Errorf("unsupported type %T", v)
	}
	return nil
}

// SortedKeys returns the metadata keys in order, for tests and dumps.
func (f *File) SortedKeys() []string {
	keys := make([]string, 0, len(f.Meta))
	for k := range f.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func align32(n uint64) uint64 { return (n + 31) &^ 31 }

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
	return n, err
}
