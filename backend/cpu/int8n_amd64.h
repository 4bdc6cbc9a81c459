// The frame of the int8 kernels that take one row against many tokens
// (q4kLanesNAVX2, q6kNAVX2), whose arguments are
// (w *byte, qs *int8, qstride int, d *float32, dstride int, bs *int16,
// bstride, nsb, ntok int, sc *int16, acc, out *float32, ostride int):
// SI walks the row's super-blocks, DI/DX/R10 the first token's
// activations, CX counts super-blocks, BX is the scratch; in a pass over
// the tokens R14/R13/R12 walk token t's activations, R11 its sums, R9
// counts.

// NARGS loads the row, the first token's activations, the counts and the
// scratch.
#define NARGS \
	MOVQ w+0(FP), SI     \
	MOVQ qs+8(FP), DI    \
	MOVQ d+24(FP), DX    \
	MOVQ bs+40(FP), R10  \
	MOVQ nsb+56(FP), CX  \
	MOVQ sc+72(FP), BX   \
	MOVQ ntok+64(FP), R9

// NTOKS starts a pass over the tokens at the first.
#define NTOKS \
	MOVQ DI, R14         \
	MOVQ DX, R13         \
	MOVQ R10, R12        \
	MOVQ acc+80(FP), R11 \
	MOVQ ntok+64(FP), R9

// NTOKNEXT(step) moves to the next token (its sums step bytes on) and
// counts it down.
#define NTOKNEXT(step) \
	ADDQ qstride+16(FP), R14 \
	MOVQ dstride+32(FP), AX  \
	LEAQ (R13)(AX*4), R13    \
	MOVQ bstride+48(FP), AX  \
	LEAQ (R12)(AX*2), R12    \
	ADDQ $(step), R11        \
	DECQ R9

// NBLOCKNEXT(size) moves to the next super-block (size bytes of the row)
// and counts it down.
#define NBLOCKNEXT(size) \
	ADDQ $(size), SI \
	ADDQ $256, DI    \
	ADDQ $4, DX      \
	ADDQ $32, R10    \
	DECQ CX

// NOUTS starts the pass that writes out[t*ostride]: R11 the sums, DI the
// output, AX its stride in bytes, R9 the count.
#define NOUTS \
	MOVQ acc+80(FP), R11     \
	MOVQ out+88(FP), DI      \
	MOVQ ostride+96(FP), AX  \
	SHLQ $2, AX              \
	MOVQ ntok+64(FP), R9
