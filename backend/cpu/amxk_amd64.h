// The frame the K-quant AMX kernels share (q4kAMX, q6kAMX), whose
// arguments are (cfg *byte, e *byte, dd *float32, qs *int8, d *float32,
// qstride, dstride, nsb, ntok, r int, acc *float32, astride int): SI walks
// the expanded tiles, DX the rows' scales, DI/R10 the activations and
// their scales, R14 counts super-blocks, R15 is a token tile's start, AX
// the stored sums (the frame), CX their stride (64).

// AMXKSETUP configures the tiles, loads the arguments and zeroes the
// ntok accumulators (astride bytes apart).
#define AMXKSETUP(zero) \
	MOVQ cfg+0(FP), AX \
	LDTILECFG_AX \
	MOVQ e+8(FP), SI \
	MOVQ dd+16(FP), DX \
	MOVQ qs+24(FP), DI \
	MOVQ d+32(FP), R10 \
	MOVQ qstride+40(FP), BX \
	MOVQ dstride+48(FP), R9 \
	SHLQ $2, R9 \
	MOVQ nsb+56(FP), R14 \
	MOVQ $64, CX \
	LEAQ 0(SP), AX \
	MOVQ acc+80(FP), R11 \
	MOVQ ntok+64(FP), R12 \
	VPXORD Z16, Z16, Z16 \
zero: \
	VMOVUPS Z16, (R11) \
	ADDQ astride+88(FP), R11 \
	DECQ R12 \
	JNZ  zero

// AMXKTILE points R8 at the activations of the tile that starts at token
// R15, or ends at ntok where fewer than r are left (R12: its first token).
#define AMXKTILE \
	MOVQ R15, R12 \
	MOVQ ntok+64(FP), R11 \
	SUBQ r+72(FP), R11 \
	CMPQ R12, R11 \
	CMOVQGT R11, R12 \
	MOVQ R12, R8 \
	IMULQ BX, R8 \
	ADDQ DI, R8

// AMXKTOKS starts the pass over the tile's tokens R15 on (those before
// were the tile before's): R8 the row in the stored sums, R12 its end,
// R11 the accumulator, R13 the scale.
#define AMXKTOKS \
	MOVQ R15, R8 \
	SUBQ R12, R8 \
	ADDQ R8, R12 \
	MOVQ R12, R13 \
	IMULQ R9, R13 \
	ADDQ R10, R13 \
	MOVQ R12, R11 \
	IMULQ astride+88(FP), R11 \
	ADDQ acc+80(FP), R11 \
	SHLQ $6, R8 \
	MOVQ r+72(FP), R12 \
	SHLQ $6, R12

// AMXKTOKNEXT steps to the tile's next token, back to tok while any is left.
#define AMXKTOKNEXT(tok) \
	ADDQ $64, R8 \
	ADDQ astride+88(FP), R11 \
	ADDQ R9, R13 \
	CMPQ R8, R12 \
	JLT  tok

// AMXKNEXT moves to the next token tile (back to tile), then past the
// super-block (its expansion ebytes, its scales ddbytes; back to sb).
#define AMXKNEXT(tile, sb, ebytes, ddbytes) \
	ADDQ r+72(FP), R15 \
	CMPQ R15, ntok+64(FP) \
	JLT  tile \
	ADDQ $(ebytes), SI \
	ADDQ $(ddbytes), DX \
	ADDQ $256, DI \
	ADDQ $4, R10 \
	DECQ R14 \
	JNZ  sb

// AMXKEXPAND loads an expansion's (w *byte, rb, nsb int, e *byte, dd
// *float32, size int): the rows at SI, Z17 their offsets (rb apart), CX
// super-blocks, the tiles at DI, the scales at DX; Z16 0x0f bytes.
#define AMXKEXPAND \
	MOVQ w+0(FP), SI \
	MOVQ rb+8(FP), AX \
	MOVQ nsb+16(FP), CX \
	MOVQ e+24(FP), DI \
	MOVQ dd+32(FP), DX \
	VPBROADCASTD AX, Z17 \
	VPMULLD ·r16iota(SB), Z17, Z17 \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z16
