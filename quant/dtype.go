package quant

import (
	"fmt"
	"strings"
)

// DType is a tensor element type, numbered as GGUF (ggml) numbers them.
type DType uint32

// The element types batchd computes with.
const (
	F32    DType = 0
	F16    DType = 1
	Q4_0   DType = 2
	Q4_1   DType = 3
	Q5_0   DType = 6
	Q5_1   DType = 7
	Q8_0   DType = 8
	Q2_K   DType = 10
	Q3_K   DType = 11
	Q4_K   DType = 12
	Q5_K   DType = 13
	Q6_K   DType = 14
	IQ4_NL DType = 20
	IQ4_XS DType = 23
	BF16   DType = 30
)

// names are ggml's, for every type a GGUF file may hold.
var names = map[DType]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S",
	22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
	29: "IQ1_M", 30: "BF16",
}

func (t DType) String() string {
	if s, ok := names[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Format is one computable type's entry in the table.
type Format struct {
	Type       DType
	BlockElems int // elements sharing one block (1 for plain floats)
	BlockBytes int // bytes of one block
	// Dequantize writes the float32 values of whole blocks src into dst
	// (len(dst) = blocks x BlockElems), exactly as ggml computes them.
	Dequantize func(src []byte, dst []float32)
	// Quantize writes dst from src, as ggml's reference quantizer does
	// (for tests and the model writer); nil if batchd does not write it.
	Quantize func(src []float32, dst []byte)
}

// formats is the per-type table; each format's file adds its entry.
var formats = map[DType]*Format{}

func register(f *Format) { formats[f.Type] = f }

// Lookup returns a type's entry, or nil when batchd cannot compute with it.
func Lookup(t DType) *Format { return formats[t] }

// Supported reports whether batchd can compute with weights of this type.
func (t DType) Supported() bool { return formats[t] != nil }

// RowBytes returns the bytes of one row of n elements, or -1 if the type is
// not supported or n does not fit its block size.
func (t DType) RowBytes(n int) int {
	f := formats[t]
	if f == nil || n%f.BlockElems != 0 {
		return -1
	}
	return n / f.BlockElems * f.BlockBytes
}

// SupportedNames lists the computable types, for error messages.
func SupportedNames() string {
	var out []string
	for t := DType(0); t < 64; t++ {
		if formats[t] != nil {
			out = append(out, t.String())
		}
	}
	return strings.Join(out, ", ")
}

// Parse parses a type name such as "f32", "F16" or "q8_0".
func Parse(s string) (DType, error) {
	for t, name := range names {
		if strings.EqualFold(name, s) && formats[t] != nil {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q (want one of %s)", s, strings.ToLower(SupportedNames()))
}
