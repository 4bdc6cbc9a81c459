package gguf

import "fmt"

// Type is a tensor's element type, as ggml numbers it.
type Type uint32

// layout is ggml's type traits: elements per block and bytes per block.
type layout struct {
	name        string
	block, size int
}

// layouts are every ggml type's block layout (ggml.c's type_traits), which
// a reader needs to bound each tensor's bytes, whether or not it computes
// with the type.
var layouts = map[Type]layout{
	0: {"F32", 1, 4}, 1: {"F16", 1, 2}, 2: {"Q4_0", 32, 18}, 3: {"Q4_1", 32, 20}, 6: {"Q5_0", 32, 22},
	7: {"Q5_1", 32, 24}, 8: {"Q8_0", 32, 34}, 9: {"Q8_1", 32, 36}, 10: {"Q2_K", 256, 84}, 11: {"Q3_K", 256, 110},
	12: {"Q4_K", 256, 144}, 13: {"Q5_K", 256, 176}, 14: {"Q6_K", 256, 210}, 15: {"Q8_K", 256, 292},
	16: {"IQ2_XXS", 256, 66}, 17: {"IQ2_XS", 256, 74}, 18: {"IQ3_XXS", 256, 98}, 19: {"IQ1_S", 256, 50},
	20: {"IQ4_NL", 32, 18}, 21: {"IQ3_S", 256, 110}, 22: {"IQ2_S", 256, 82}, 23: {"IQ4_XS", 256, 136},
	24: {"I8", 1, 1}, 25: {"I16", 1, 2}, 26: {"I32", 1, 4}, 27: {"I64", 1, 8}, 28: {"F64", 1, 8},
	29: {"IQ1_M", 256, 56}, 30: {"BF16", 1, 2}, 34: {"TQ1_0", 256, 54}, 35: {"TQ2_0", 256, 66}, 39: {"MXFP4", 32, 17},
}

func (t Type) String() string {
	if l, ok := layouts[t]; ok {
		return l.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Known reports whether ggml defines the type.
func (t Type) Known() bool { _, ok := layouts[t]; return ok }

// BlockLayout returns elements and bytes per block (0, 0 if unknown).
func (t Type) BlockLayout() (elems, bytes int) {
	l := layouts[t]
	return l.block, l.size
}

// RowBytes returns the bytes of a row of n elements: -1 if n is not a
// multiple of the block, -2 if ggml does not define the type.
func (t Type) RowBytes(n int) int {
	l, ok := layouts[t]
	switch {
	case !ok:
		return -2
	case n%l.block != 0:
		return -1
	}
	return n / l.block * l.size
}
