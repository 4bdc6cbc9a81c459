//go:build amd64 && !purego

#include "textflag.h"

// The row-lane int8 kernels (int8rows.go), AVX512-VNNI: sixteen rows at
// once, lane j holding one row's sum. Per block each row's bytes are
// loaded and transposed so that vector v holds, for every row, the four
// weights that meet activation bytes 4v..4v+3; a token then costs eight
// VPDPBUSD against its activations' dwords broadcast, and one float
// epilogue for sixteen rows. Weights are unsigned (Q8_0's biased by 128,
// Q4_0's nibbles by 8); the offset times the block's activation sum comes
// off through nsum (minus the sum), so a lane's integer is exact, and
// acc = acc + p * (d_w * d_a) per block, in block order.

// r16perm: the lane order Q8_0's transposition leaves (rows 0-3, 8-11,
// 4-7, 12-15; its own inverse), used to gather its scales and to store.
DATA r16perm<>+0(SB)/8, $0x0000000100000000
DATA r16perm<>+8(SB)/8, $0x0000000300000002
DATA r16perm<>+16(SB)/8, $0x0000000900000008
DATA r16perm<>+24(SB)/8, $0x0000000b0000000a
DATA r16perm<>+32(SB)/8, $0x0000000500000004
DATA r16perm<>+40(SB)/8, $0x0000000700000006
DATA r16perm<>+48(SB)/8, $0x0000000d0000000c
DATA r16perm<>+56(SB)/8, $0x0000000f0000000e
GLOBL r16perm<>(SB), RODATA|NOPTR, $64

// iq4nlu8: IQ4_NL's grid plus 128, as unsigned bytes.
DATA iq4nlu8<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4nlu8<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4nlu8<>(SB), RODATA|NOPTR, $16

DATA r16c63<>+0(SB)/4, $63
GLOBL r16c63<>(SB), RODATA|NOPTR, $4
DATA r16c15<>+0(SB)/4, $15
GLOBL r16c15<>(SB), RODATA|NOPTR, $4
DATA r16c3<>+0(SB)/4, $3
GLOBL r16c3<>(SB), RODATA|NOPTR, $4

// r16iota: rows in order (Q4_0's transposition).
DATA r16iota<>+0(SB)/8, $0x0000000100000000
DATA r16iota<>+8(SB)/8, $0x0000000300000002
DATA r16iota<>+16(SB)/8, $0x0000000500000004
DATA r16iota<>+24(SB)/8, $0x0000000700000006
DATA r16iota<>+32(SB)/8, $0x0000000900000008
DATA r16iota<>+40(SB)/8, $0x0000000b0000000a
DATA r16iota<>+48(SB)/8, $0x0000000d0000000c
DATA r16iota<>+56(SB)/8, $0x0000000f0000000e
GLOBL r16iota<>(SB), RODATA|NOPTR, $64

// R16SETUP zeroes the ntok accumulators and loads the arguments: SI rows,
// R11 rb (R15 3rb), DI qs, DX d, R8 nsum, BX qstride, R9 dstride in bytes,
// CX blocks; Z18 the lane order (from lanes), Z17 its rows' offsets,
// Z19 zero; pf-8(SP) the next group of rows.
#define R16SETUP(lanes) \
	MOVQ acc+72(FP), AX \
	MOVQ ntok+64(FP), R12 \
	VPXORD Z19, Z19, Z19 \
zero_loop: \
	VMOVUPS Z19, (AX) \
	ADDQ $64, AX \
	DECQ R12 \
	JNZ  zero_loop \
	MOVQ w+0(FP), SI \
	MOVQ rb+8(FP), R11 \
	LEAQ (R11)(R11*2), R15 \
	MOVQ qs+16(FP), DI \
	MOVQ d+24(FP), DX \
	MOVQ nsum+32(FP), R8 \
	MOVQ qstride+40(FP), BX \
	MOVQ dstride+48(FP), R9 \
	SHLQ $2, R9 \
	MOVQ nb+56(FP), CX \
	VMOVDQU32 lanes, Z18 \
	VPBROADCASTD R11, Z17 \
	VPMULLD Z18, Z17, Z17 \
	MOVQ R11, AX \
	SHLQ $4, AX \
	ADDQ SI, AX \
	MOVQ AX, pf-8(SP)

// R16BASES points R13, R14 and R10 at rows 4, 8 and 12.
#define R16BASES \
	LEAQ (SI)(R11*4), R13 \
	LEAQ (SI)(R11*8), R14 \
	LEAQ (R13)(R11*8), R10

// R16SCALES gathers the sixteen rows' fp16 scales (at SI) into Z20 in
// lane order, as floats.
#define R16SCALES \
	KXNORW K2, K2, K2 \
	VPGATHERDD (SI)(Z17*1), K2, Z20 \
	VPMOVDW    Z20, Y20 \
	VCVTPH2PS  Y20, Z20

// R16LOAD32 loads sixteen rows' 32 bytes at off and leaves dword v of
// every row in Z(8+v): Z(i) = row i | row i+8, then 8x8 dword transposes
// in each 256-bit half; lanes in r16perm's order.
#define R16LOAD32(off) \
	R16BASES \
	VMOVDQU      off(SI), Y0 \
	VINSERTI64X4 $1, off(R14), Z0, Z0 \
	VMOVDQU      off(SI)(R11*1), Y1 \
	VINSERTI64X4 $1, off(R14)(R11*1), Z1, Z1 \
	VMOVDQU      off(SI)(R11*2), Y2 \
	VINSERTI64X4 $1, off(R14)(R11*2), Z2, Z2 \
	VMOVDQU      off(SI)(R15*1), Y3 \
	VINSERTI64X4 $1, off(R14)(R15*1), Z3, Z3 \
	VMOVDQU      off(R13), Y4 \
	VINSERTI64X4 $1, off(R10), Z4, Z4 \
	VMOVDQU      off(R13)(R11*1), Y5 \
	VINSERTI64X4 $1, off(R10)(R11*1), Z5, Z5 \
	VMOVDQU      off(R13)(R11*2), Y6 \
	VINSERTI64X4 $1, off(R10)(R11*2), Z6, Z6 \
	VMOVDQU      off(R13)(R15*1), Y7 \
	VINSERTI64X4 $1, off(R10)(R15*1), Z7, Z7 \
	VPUNPCKLDQ  Z1, Z0, Z8 \
	VPUNPCKHDQ  Z1, Z0, Z9 \
	VPUNPCKLDQ  Z3, Z2, Z10 \
	VPUNPCKHDQ  Z3, Z2, Z11 \
	VPUNPCKLDQ  Z5, Z4, Z12 \
	VPUNPCKHDQ  Z5, Z4, Z13 \
	VPUNPCKLDQ  Z7, Z6, Z14 \
	VPUNPCKHDQ  Z7, Z6, Z15 \
	VPUNPCKLQDQ Z10, Z8, Z0 \
	VPUNPCKHQDQ Z10, Z8, Z1 \
	VPUNPCKLQDQ Z11, Z9, Z2 \
	VPUNPCKHQDQ Z11, Z9, Z3 \
	VPUNPCKLQDQ Z14, Z12, Z4 \
	VPUNPCKHQDQ Z14, Z12, Z5 \
	VPUNPCKLQDQ Z15, Z13, Z6 \
	VPUNPCKHQDQ Z15, Z13, Z7 \
	VSHUFI32X4 $0x88, Z4, Z0, Z8 \
	VSHUFI32X4 $0xdd, Z4, Z0, Z12 \
	VSHUFI32X4 $0x88, Z5, Z1, Z9 \
	VSHUFI32X4 $0xdd, Z5, Z1, Z13 \
	VSHUFI32X4 $0x88, Z6, Z2, Z10 \
	VSHUFI32X4 $0xdd, Z6, Z2, Z14 \
	VSHUFI32X4 $0x88, Z7, Z3, Z11 \
	VSHUFI32X4 $0xdd, Z7, Z3, Z15

// R16DOT8 adds to acc the products of weights Z8..Z15 with the token's
// activation dwords at (R13); R16DOT8HI those of Z0..Z7 with the next 32
// bytes (Q4_K's second sub-block).
#define R16DOT8(acc) \
	VPDPBUSD.BCST   (R13), Z8, acc \
	VPDPBUSD.BCST   4(R13), Z9, acc \
	VPDPBUSD.BCST   8(R13), Z10, acc \
	VPDPBUSD.BCST   12(R13), Z11, acc \
	VPDPBUSD.BCST   16(R13), Z12, acc \
	VPDPBUSD.BCST   20(R13), Z13, acc \
	VPDPBUSD.BCST   24(R13), Z14, acc \
	VPDPBUSD.BCST   28(R13), Z15, acc

#define R16DOT8HI(acc) \
	VPDPBUSD.BCST   32(R13), Z0, acc \
	VPDPBUSD.BCST   36(R13), Z1, acc \
	VPDPBUSD.BCST   40(R13), Z2, acc \
	VPDPBUSD.BCST   44(R13), Z3, acc \
	VPDPBUSD.BCST   48(R13), Z4, acc \
	VPDPBUSD.BCST   52(R13), Z5, acc \
	VPDPBUSD.BCST   56(R13), Z6, acc \
	VPDPBUSD.BCST   60(R13), Z7, acc

// R16TOKSTART points R13, R14, R10 and AX at the first token's
// activations, scales, negated sums and accumulator, R12 at the count.
#define R16TOKSTART \
	MOVQ DI, R13 \
	MOVQ DX, R14 \
	MOVQ R8, R10 \
	MOVQ acc+72(FP), AX \
	MOVQ ntok+64(FP), R12

// R16DOTS adds the block's integers (weights in Z8..Z15, started in Z21)
// times its scales (Z20 times the token's) to the accumulator, in Z21.
#define R16DOTS \
	R16DOT8(Z21) \
	VCVTDQ2PS       Z21, Z21 \
	VMULPS.BCST     (R14), Z20, Z22 \
	VMULPS          Z22, Z21, Z21 \
	VADDPS          (AX), Z21, Z21

// R16MIN adds the mins' part (Z23 times the token's scale, times its
// activations' sum: minus that of their negated sum) to Z21.
#define R16MIN \
	VPBROADCASTD    (R10), Z24 \
	VCVTDQ2PS       Z24, Z24 \
	VMULPS.BCST     (R14), Z23, Z22 \
	VMULPS          Z22, Z24, Z24 \
	VSUBPS          Z24, Z21, Z21

// R16NEXT stores Z21 and steps to the next token.
#define R16NEXT \
	VMOVUPS Z21, (AX) \
	ADDQ BX, R13 \
	ADDQ R9, R14 \
	ADDQ R9, R10 \
	ADDQ $64, AX \
	DECQ R12

// R16TOKENS adds the block into every token's accumulator, the weights'
// offset 2^sh.
#define R16TOKENS(sh) \
	R16TOKSTART \
tok_loop: \
	VPBROADCASTD    (R10), Z21 \
	VPSLLD          $sh, Z21, Z21 \
	R16DOTS \
	R16NEXT \
	JNZ  tok_loop

// R16TOKENSMIN is R16TOKENS for unsigned weights with a min.
#define R16TOKENSMIN \
	R16TOKSTART \
tok_loop: \
	VPXORD          Z21, Z21, Z21 \
	R16DOTS \
	R16MIN \
	R16NEXT \
	JNZ  tok_loop

// R16PF prefetches the next group of rows, step bytes (sixteen blocks) a
// block: sixteen rows' streams are more than the hardware prefetcher
// follows.
#define R16PF(step) \
	MOVQ pf-8(SP), AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	PREFETCHT0 256(AX) \
	PREFETCHT0 320(AX) \
	ADDQ $step, AX \
	MOVQ AX, pf-8(SP)

// R16NIBBLES loads sixteen rows' 16 bytes of nibbles at off and leaves,
// for v in 0..7, the values meeting activation bytes 4v..4v+3 in Z(8+v):
// the rows are transposed 4x4 per 128-bit lane (Z(k) = rows k, k+4, k+8,
// k+12), low nibbles are values 0-15, high ones 16-31. Z16: 0x0f bytes.
#define R16NIBBLES(off) \
	R16BASES \
	VMOVDQU      off(SI), X0 \
	VINSERTI32X4 $1, off(R13), Z0, Z0 \
	VINSERTI32X4 $2, off(R14), Z0, Z0 \
	VINSERTI32X4 $3, off(R10), Z0, Z0 \
	VMOVDQU      off(SI)(R11*1), X1 \
	VINSERTI32X4 $1, off(R13)(R11*1), Z1, Z1 \
	VINSERTI32X4 $2, off(R14)(R11*1), Z1, Z1 \
	VINSERTI32X4 $3, off(R10)(R11*1), Z1, Z1 \
	VMOVDQU      off(SI)(R11*2), X2 \
	VINSERTI32X4 $1, off(R13)(R11*2), Z2, Z2 \
	VINSERTI32X4 $2, off(R14)(R11*2), Z2, Z2 \
	VINSERTI32X4 $3, off(R10)(R11*2), Z2, Z2 \
	VMOVDQU      off(SI)(R15*1), X3 \
	VINSERTI32X4 $1, off(R13)(R15*1), Z3, Z3 \
	VINSERTI32X4 $2, off(R14)(R15*1), Z3, Z3 \
	VINSERTI32X4 $3, off(R10)(R15*1), Z3, Z3 \
	VPUNPCKLDQ  Z1, Z0, Z8 \
	VPUNPCKHDQ  Z1, Z0, Z9 \
	VPUNPCKLDQ  Z3, Z2, Z10 \
	VPUNPCKHDQ  Z3, Z2, Z11 \
	VPUNPCKLQDQ Z10, Z8, Z4 \
	VPUNPCKHQDQ Z10, Z8, Z5 \
	VPUNPCKLQDQ Z11, Z9, Z6 \
	VPUNPCKHQDQ Z11, Z9, Z7 \
	VPSRLD $4, Z4, Z12 \
	VPSRLD $4, Z5, Z13 \
	VPSRLD $4, Z6, Z14 \
	VPSRLD $4, Z7, Z15 \
	VPANDD Z16, Z4, Z8 \
	VPANDD Z16, Z5, Z9 \
	VPANDD Z16, Z6, Z10 \
	VPANDD Z16, Z7, Z11 \
	VPANDD Z16, Z12, Z12 \
	VPANDD Z16, Z13, Z13 \
	VPANDD Z16, Z14, Z14 \
	VPANDD Z16, Z15, Z15

// R16FIFTH ORs each value's fifth bit into Z(8+v): bit e of the rows' qh
// (gathered at off) for value e, spread to bit 4 of its byte by a
// multiply (Z25: 0x0f, Z26: 0x02040810, Z27: 0x10 bytes).
#define R16FIFTH(off) \
	KXNORW K3, K3, K3 \
	VPGATHERDD off(SI)(Z17*1), K3, Z24 \
	R16BIT(0, Z24, Z8) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(1, Z24, Z9) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(2, Z24, Z10) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(3, Z24, Z11) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(4, Z24, Z12) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(5, Z24, Z13) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(6, Z24, Z14) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(7, Z24, Z15)

#define R16BIT(v, h, z) \
	VPANDD  Z25, h, Z0 \
	VPMULLD Z26, Z0, Z0 \
	VPANDD  Z27, Z0, Z0 \
	VPORD   Z0, z, z

// R16FIFTHSETUP loads R16FIFTH's constants.
#define R16FIFTHSETUP \
	MOVL $0x0f, AX \
	VPBROADCASTD AX, Z25 \
	MOVL $0x02040810, AX \
	VPBROADCASTD AX, Z26 \
	MOVL $0x10101010, AX \
	VPBROADCASTD AX, Z27

// R16SCALESMIN gathers the rows' fp16 scale and min (the dword at SI)
// into Z20 and Z23, as floats.
#define R16SCALESMIN \
	KXNORW K2, K2, K2 \
	VPGATHERDD (SI)(Z17*1), K2, Z23 \
	VPMOVDW    Z23, Y20 \
	VCVTPH2PS  Y20, Z20 \
	VPSRLD     $16, Z23, Z23 \
	VPMOVDW    Z23, Y23 \
	VCVTPH2PS  Y23, Z23

// R16STEP moves to the next block (size bytes a row).
#define R16STEP(size) \
	ADDQ $size, SI \
	ADDQ $32, DI \
	ADDQ $4, DX \
	ADDQ $4, R8 \
	DECQ CX

// R16OUT stores each token's sixteen results in row order (Z18 undoes
// the lane order).
#define R16OUT \
	MOVQ acc+72(FP), AX \
	MOVQ out+80(FP), DI \
	MOVQ ostride+88(FP), BX \
	SHLQ $2, BX \
	MOVQ ntok+64(FP), R12 \
out_loop: \
	VPERMPS (AX), Z18, Z21 \
	VMOVUPS Z21, (DI) \
	ADDQ $64, AX \
	ADDQ BX, DI \
	DECQ R12 \
	JNZ  out_loop \
	VZEROUPPER \
	RET

// func q80Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Rows w, w+rb, ..., w+15rb; token t's activations at qs+t*qstride, its
// block scales and negated sums at d and nsum + t*dstride (elements); acc:
// 16*ntok floats of scratch; out[t*ostride+j]: row j's result for token t.
TEXT ·q80Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16perm<>(SB))
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z16

q80_block:
	// The next group of rows (16 rb bytes on), 544 bytes of it a block:
	// sixteen rows' streams are more than the hardware prefetcher follows.
	MOVQ pf-8(SP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	PREFETCHT0 448(AX)
	PREFETCHT0 512(AX)
	ADDQ $544, AX
	MOVQ AX, pf-8(SP)
	R16LOAD32(2)
	VPXORD Z16, Z8, Z8
	VPXORD Z16, Z9, Z9
	VPXORD Z16, Z10, Z10
	VPXORD Z16, Z11, Z11
	VPXORD Z16, Z12, Z12
	VPXORD Z16, Z13, Z13
	VPXORD Z16, Z14, Z14
	VPXORD Z16, Z15, Z15
	R16SCALES
	R16TOKENS(7)
	R16STEP(34)
	JNZ  q80_block
	R16OUT

// func q40Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// As q80Rows16VNNI for Q4_0 rows (18-byte blocks: scale, 16 bytes of
// nibbles), lanes in row order; the offset is 8.
TEXT ·q40Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
q40_block:
	R16PF(288)
	R16NIBBLES(2)
	R16SCALES
	R16TOKENS(3)
	R16STEP(18)
	JNZ  q40_block
	R16OUT

// func iq4nlRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// IQ4_NL: Q4_0's layout, each nibble an index into the grid, which
// VPSHUFB looks up (iq4nlu8: the grid plus 128); the offset is 128.
TEXT ·iq4nlRows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 iq4nlu8<>(SB), Z28
iq4nl_block:
	R16PF(288)
	R16NIBBLES(2)
	VPSHUFB Z8, Z28, Z8
	VPSHUFB Z9, Z28, Z9
	VPSHUFB Z10, Z28, Z10
	VPSHUFB Z11, Z28, Z11
	VPSHUFB Z12, Z28, Z12
	VPSHUFB Z13, Z28, Z13
	VPSHUFB Z14, Z28, Z14
	VPSHUFB Z15, Z28, Z15
	R16SCALES
	R16TOKENS(7)
	R16STEP(18)
	JNZ  iq4nl_block
	R16OUT

// func q41Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Q4_1 (20-byte blocks: scale, min, nibbles): unsigned values, then the
// min times the activations' sum.
TEXT ·q41Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
q41_block:
	R16PF(320)
	R16NIBBLES(4)
	R16SCALESMIN
	R16TOKENSMIN
	R16STEP(20)
	JNZ  q41_block
	R16OUT

// func q50Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Q5_0 (22-byte blocks: scale, 32 fifth bits, nibbles); the offset is 16.
TEXT ·q50Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	R16FIFTHSETUP
q50_block:
	R16PF(352)
	R16NIBBLES(6)
	R16FIFTH(2)
	R16SCALES
	R16TOKENS(4)
	R16STEP(22)
	JNZ  q50_block
	R16OUT

// func q51Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Q5_1 (24-byte blocks: scale, min, fifth bits, nibbles).
TEXT ·q51Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	R16FIFTHSETUP
q51_block:
	R16PF(384)
	R16NIBBLES(8)
	R16FIFTH(4)
	R16SCALESMIN
	R16TOKENSMIN
	R16STEP(24)
	JNZ  q51_block
	R16OUT

// func iq4xsRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// IQ4_XS against q8_K activations (nb super-blocks of 256; d: a scale per
// 256 values, nsum: a negated sum per 32, so 8*dstride of them a token).
// Per 32-value sub-block as IQ4_NL's, its integer times the sub-block's
// 6-bit scale less 32 summed exactly over the super-block (in acc's second
// half, 16 words a token); then acc = acc + (d_a * d_w) * S.
TEXT ·iq4xsRows16VNNI(SB), NOSPLIT, $16-96
	R16SETUP(r16iota<>(SB))
	MOVQ ntok+64(FP), R12
	MOVQ R12, R13
	SHLQ $6, R13
	ADDQ acc+72(FP), R13
iq4xs_zero:
	VMOVDQU32 Z19, (R13)
	ADDQ $64, R13
	DECQ R12
	JNZ  iq4xs_zero
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 iq4nlu8<>(SB), Z28
	MOVL $0x0f, AX
	VPBROADCASTD AX, Z25
	MOVL $3, AX
	VPBROADCASTD AX, Z26
	MOVL $32, AX
	VPBROADCASTD AX, Z27

iq4xs_sb:
	// Z20: the rows' d; Z30: their scales_h; Z29: scales_l.
	KXNORW K2, K2, K2
	VPGATHERDD (SI)(Z17*1), K2, Z30
	VPMOVDW    Z30, Y20
	VCVTPH2PS  Y20, Z20
	VPSRLD     $16, Z30, Z30
	KXNORW K3, K3, K3
	VPGATHERDD 4(SI)(Z17*1), K3, Z29
	MOVQ $8, ib-16(SP)

iq4xs_ib:
	R16PF(272)
	R16NIBBLES(8)
	VPSHUFB Z8, Z28, Z8
	VPSHUFB Z9, Z28, Z9
	VPSHUFB Z10, Z28, Z10
	VPSHUFB Z11, Z28, Z11
	VPSHUFB Z12, Z28, Z12
	VPSHUFB Z13, Z28, Z13
	VPSHUFB Z14, Z28, Z14
	VPSHUFB Z15, Z28, Z15
	// Z31: this sub-block's scale less 32, per row.
	VPANDD Z25, Z29, Z31
	VPANDD Z26, Z30, Z0
	VPSLLD $4, Z0, Z0
	VPORD  Z0, Z31, Z31
	VPSUBD Z27, Z31, Z31
	VPSRLD $4, Z29, Z29
	VPSRLD $2, Z30, Z30
	MOVQ DI, R13
	MOVQ R8, R10
	MOVQ ntok+64(FP), R12
	MOVQ R12, AX
	SHLQ $6, AX
	ADDQ acc+72(FP), AX

iq4xs_tok:
	VPBROADCASTD    (R10), Z21
	VPSLLD          $7, Z21, Z21
	R16DOT8(Z21)
	VPMULLD         Z31, Z21, Z21
	VPADDD          (AX), Z21, Z21
	VMOVDQU32       Z21, (AX)
	ADDQ BX, R13
	LEAQ (R10)(R9*8), R10
	ADDQ $64, AX
	DECQ R12
	JNZ  iq4xs_tok

	ADDQ $16, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ ib-16(SP)
	JNZ  iq4xs_ib

	// The super-block's float step, and its sums cleared for the next.
	ADDQ $8, SI
	MOVQ DX, R14
	MOVQ acc+72(FP), AX
	MOVQ ntok+64(FP), R12
	MOVQ R12, R13
	SHLQ $6, R13
	ADDQ AX, R13

iq4xs_fl:
	VCVTDQ2PS   (R13), Z21
	VMOVDQU32   Z19, (R13)
	VMULPS.BCST (R14), Z20, Z22
	VMULPS      Z22, Z21, Z21
	VADDPS      (AX), Z21, Z21
	VMOVUPS     Z21, (AX)
	ADDQ R9, R14
	ADDQ $64, AX
	ADDQ $64, R13
	DECQ R12
	JNZ  iq4xs_fl

	ADDQ $4, DX
	DECQ CX
	JNZ  iq4xs_sb
	R16OUT

// Q4_K (144-byte super-blocks: d, dmin, twelve bytes of 6-bit scales and
// mins, 128 bytes of nibbles: chunk p's low nibbles are sub-block 2p, its
// high ones 2p+1) against q8_K activations. Per super-block and token the
// exact integers S = sum of scale_j p_j and M = sum of min_j times minus
// sub-block j's activation sum (acc's second part: S then M, 32 words a
// token); then acc = acc + (d_a d) S, then + (d_a dmin) M (dotQ4KRowGo).

// Q4KSCLO(j, zs, zm): sub-block j < 4's scale and min, from the rows'
// scale bytes 0-3 (Z29) and 4-7 (Z30).
#define Q4KSCLO(j, zs, zm) \
	VPSRLD $(8*j), Z29, zs \
	VPANDD.BCST r16c63<>(SB), zs, zs \
	VPSRLD $(8*j), Z30, zm \
	VPANDD.BCST r16c63<>(SB), zm, zm

// Q4KSCHI(i, zs, zm): sub-block 4+i's, from bytes 8-11 (Z31) and the top
// two bits of bytes i and 4+i.
#define Q4KSCHI(i, zs, zm) \
	VPSRLD $(8*i), Z31, zs \
	VPANDD.BCST r16c15<>(SB), zs, zs \
	VPSRLD $(8*i+6), Z29, Z28 \
	VPANDD.BCST r16c3<>(SB), Z28, Z28 \
	VPSLLD $4, Z28, Z28 \
	VPORD  Z28, zs, zs \
	VPSRLD $(8*i+4), Z31, zm \
	VPANDD.BCST r16c15<>(SB), zm, zm \
	VPSRLD $(8*i+6), Z30, Z28 \
	VPANDD.BCST r16c3<>(SB), Z28, Z28 \
	VPSLLD $4, Z28, Z28 \
	VPORD  Z28, zm, zm

// Q4KCHUNK(p, lbl) adds chunk p (sub-blocks 2p and 2p+1, scales and mins
// in Z24/Z25 and Z26/Z27) into every token's S and M.
#define Q4KCHUNK(p, lbl) \
	R16PF9(576) \
	R16LOAD32(16+32*p) \
	VPSRLD $4, Z8, Z0 \
	VPSRLD $4, Z9, Z1 \
	VPSRLD $4, Z10, Z2 \
	VPSRLD $4, Z11, Z3 \
	VPSRLD $4, Z12, Z4 \
	VPSRLD $4, Z13, Z5 \
	VPSRLD $4, Z14, Z6 \
	VPSRLD $4, Z15, Z7 \
	VPANDD Z16, Z8, Z8 \
	VPANDD Z16, Z9, Z9 \
	VPANDD Z16, Z10, Z10 \
	VPANDD Z16, Z11, Z11 \
	VPANDD Z16, Z12, Z12 \
	VPANDD Z16, Z13, Z13 \
	VPANDD Z16, Z14, Z14 \
	VPANDD Z16, Z15, Z15 \
	VPANDD Z16, Z0, Z0 \
	VPANDD Z16, Z1, Z1 \
	VPANDD Z16, Z2, Z2 \
	VPANDD Z16, Z3, Z3 \
	VPANDD Z16, Z4, Z4 \
	VPANDD Z16, Z5, Z5 \
	VPANDD Z16, Z6, Z6 \
	VPANDD Z16, Z7, Z7 \
	LEAQ (64*p)(DI), R13 \
	LEAQ (8*p)(R8), R10 \
	MOVQ ntok+64(FP), R12 \
	MOVQ R12, AX \
	SHLQ $6, AX \
	ADDQ acc+72(FP), AX \
lbl: \
	VPXORD          Z21, Z21, Z21 \
	R16DOT8(Z21) \
	VPMULLD         Z24, Z21, Z21 \
	VPXORD          Z22, Z22, Z22 \
	R16DOT8HI(Z22) \
	VPMULLD         Z25, Z22, Z22 \
	VPADDD          Z22, Z21, Z21 \
	VPADDD          (AX), Z21, Z21 \
	VMOVDQU32       Z21, (AX) \
	VPBROADCASTD    (R10), Z21 \
	VPMULLD         Z26, Z21, Z21 \
	VPBROADCASTD    4(R10), Z22 \
	VPMULLD         Z27, Z22, Z22 \
	VPADDD          Z22, Z21, Z21 \
	VPADDD          64(AX), Z21, Z21 \
	VMOVDQU32       Z21, 64(AX) \
	ADDQ BX, R13 \
	LEAQ (R10)(R9*8), R10 \
	SUBQ $-128, AX \
	DECQ R12 \
	JNZ  lbl

// R16PF9 is R16PF over nine lines.
#define R16PF9(step) \
	MOVQ pf-8(SP), AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	PREFETCHT0 256(AX) \
	PREFETCHT0 320(AX) \
	PREFETCHT0 384(AX) \
	PREFETCHT0 448(AX) \
	PREFETCHT0 512(AX) \
	ADDQ $step, AX \
	MOVQ AX, pf-8(SP)

// func q4kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q4kRows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16perm<>(SB))
	MOVQ ntok+64(FP), R12
	MOVQ acc+72(FP), R13
	MOVQ R12, AX
	SHLQ $6, AX
	ADDQ AX, R13
q4k_zero:
	VMOVDQU32 Z19, (R13)
	VMOVDQU32 Z19, 64(R13)
	SUBQ $-128, R13
	DECQ R12
	JNZ  q4k_zero
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16

q4k_sb:
	R16SCALESMIN
	KXNORW K3, K3, K3
	VPGATHERDD 4(SI)(Z17*1), K3, Z29
	KXNORW K3, K3, K3
	VPGATHERDD 8(SI)(Z17*1), K3, Z30
	KXNORW K3, K3, K3
	VPGATHERDD 12(SI)(Z17*1), K3, Z31
	Q4KSCLO(0, Z24, Z26)
	Q4KSCLO(1, Z25, Z27)
	Q4KCHUNK(0, q4k_t0)
	Q4KSCLO(2, Z24, Z26)
	Q4KSCLO(3, Z25, Z27)
	Q4KCHUNK(1, q4k_t1)
	Q4KSCHI(0, Z24, Z26)
	Q4KSCHI(1, Z25, Z27)
	Q4KCHUNK(2, q4k_t2)
	Q4KSCHI(2, Z24, Z26)
	Q4KSCHI(3, Z25, Z27)
	Q4KCHUNK(3, q4k_t3)

	// The super-block's float steps, and S and M cleared for the next.
	MOVQ DX, R14
	MOVQ acc+72(FP), AX
	MOVQ ntok+64(FP), R12
	MOVQ R12, R13
	SHLQ $6, R13
	ADDQ AX, R13
q4k_fl:
	VCVTDQ2PS   (R13), Z21
	VMULPS.BCST (R14), Z20, Z22
	VMULPS      Z22, Z21, Z21
	VADDPS      (AX), Z21, Z21
	VCVTDQ2PS   64(R13), Z24
	VMULPS.BCST (R14), Z23, Z22
	VMULPS      Z22, Z24, Z24
	VADDPS      Z24, Z21, Z21
	VMOVUPS     Z21, (AX)
	VMOVDQU32   Z19, (R13)
	VMOVDQU32   Z19, 64(R13)
	ADDQ R9, R14
	ADDQ $64, AX
	SUBQ $-128, R13
	DECQ R12
	JNZ  q4k_fl

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q4k_sb
	R16OUT
