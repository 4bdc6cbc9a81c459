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

// R16TOKENS adds block b into every token's accumulator: weights in
// Z8..Z15, scales in Z20, the offset 2^sh.
#define R16TOKENS(sh) \
	MOVQ DI, R13 \
	MOVQ DX, R14 \
	MOVQ R8, R10 \
	MOVQ acc+72(FP), AX \
	MOVQ ntok+64(FP), R12 \
tok_loop: \
	VPBROADCASTD    (R10), Z21 \
	VPSLLD          $sh, Z21, Z21 \
	VPDPBUSD.BCST   (R13), Z8, Z21 \
	VPDPBUSD.BCST   4(R13), Z9, Z21 \
	VPDPBUSD.BCST   8(R13), Z10, Z21 \
	VPDPBUSD.BCST   12(R13), Z11, Z21 \
	VPDPBUSD.BCST   16(R13), Z12, Z21 \
	VPDPBUSD.BCST   20(R13), Z13, Z21 \
	VPDPBUSD.BCST   24(R13), Z14, Z21 \
	VPDPBUSD.BCST   28(R13), Z15, Z21 \
	VCVTDQ2PS       Z21, Z21 \
	VMULPS.BCST     (R14), Z20, Z22 \
	VMULPS          Z22, Z21, Z21 \
	VADDPS          (AX), Z21, Z21 \
	VMOVUPS         Z21, (AX) \
	ADDQ BX, R13 \
	ADDQ R9, R14 \
	ADDQ R9, R10 \
	ADDQ $64, AX \
	DECQ R12 \
	JNZ  tok_loop

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
	// Z(i) = row i | row i+8, 32 bytes each.
	R16BASES
	VMOVDQU      2(SI), Y0
	VINSERTI64X4 $1, 2(R14), Z0, Z0
	VMOVDQU      2(SI)(R11*1), Y1
	VINSERTI64X4 $1, 2(R14)(R11*1), Z1, Z1
	VMOVDQU      2(SI)(R11*2), Y2
	VINSERTI64X4 $1, 2(R14)(R11*2), Z2, Z2
	VMOVDQU      2(SI)(R15*1), Y3
	VINSERTI64X4 $1, 2(R14)(R15*1), Z3, Z3
	VMOVDQU      2(R13), Y4
	VINSERTI64X4 $1, 2(R10), Z4, Z4
	VMOVDQU      2(R13)(R11*1), Y5
	VINSERTI64X4 $1, 2(R10)(R11*1), Z5, Z5
	VMOVDQU      2(R13)(R11*2), Y6
	VINSERTI64X4 $1, 2(R10)(R11*2), Z6, Z6
	VMOVDQU      2(R13)(R15*1), Y7
	VINSERTI64X4 $1, 2(R10)(R15*1), Z7, Z7
	// 8x8 dword transposes in each 256-bit half.
	VPUNPCKLDQ  Z1, Z0, Z8
	VPUNPCKHDQ  Z1, Z0, Z9
	VPUNPCKLDQ  Z3, Z2, Z10
	VPUNPCKHDQ  Z3, Z2, Z11
	VPUNPCKLDQ  Z5, Z4, Z12
	VPUNPCKHDQ  Z5, Z4, Z13
	VPUNPCKLDQ  Z7, Z6, Z14
	VPUNPCKHDQ  Z7, Z6, Z15
	VPUNPCKLQDQ Z10, Z8, Z0
	VPUNPCKHQDQ Z10, Z8, Z1
	VPUNPCKLQDQ Z11, Z9, Z2
	VPUNPCKHQDQ Z11, Z9, Z3
	VPUNPCKLQDQ Z14, Z12, Z4
	VPUNPCKHQDQ Z14, Z12, Z5
	VPUNPCKLQDQ Z15, Z13, Z6
	VPUNPCKHQDQ Z15, Z13, Z7
	// Z(8+e): dword e of every row, biased.
	VSHUFI32X4 $0x88, Z4, Z0, Z8
	VSHUFI32X4 $0xdd, Z4, Z0, Z12
	VSHUFI32X4 $0x88, Z5, Z1, Z9
	VSHUFI32X4 $0xdd, Z5, Z1, Z13
	VSHUFI32X4 $0x88, Z6, Z2, Z10
	VSHUFI32X4 $0xdd, Z6, Z2, Z14
	VSHUFI32X4 $0x88, Z7, Z3, Z11
	VSHUFI32X4 $0xdd, Z7, Z3, Z15
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
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, R8
	DECQ CX
	JNZ  q80_block
	R16OUT

// func q40Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// As q80Rows16VNNI for Q4_0 rows (18-byte blocks: scale, 16 bytes of
// nibbles, values 0-15 low and 16-31 high), lanes in row order.
TEXT ·q40Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16

q40_block:
	MOVQ pf-8(SP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	ADDQ $288, AX
	MOVQ AX, pf-8(SP)
	// Z(k) = rows k, k+4, k+8, k+12, 16 bytes each.
	R16BASES
	VMOVDQU      2(SI), X0
	VINSERTI32X4 $1, 2(R13), Z0, Z0
	VINSERTI32X4 $2, 2(R14), Z0, Z0
	VINSERTI32X4 $3, 2(R10), Z0, Z0
	VMOVDQU      2(SI)(R11*1), X1
	VINSERTI32X4 $1, 2(R13)(R11*1), Z1, Z1
	VINSERTI32X4 $2, 2(R14)(R11*1), Z1, Z1
	VINSERTI32X4 $3, 2(R10)(R11*1), Z1, Z1
	VMOVDQU      2(SI)(R11*2), X2
	VINSERTI32X4 $1, 2(R13)(R11*2), Z2, Z2
	VINSERTI32X4 $2, 2(R14)(R11*2), Z2, Z2
	VINSERTI32X4 $3, 2(R10)(R11*2), Z2, Z2
	VMOVDQU      2(SI)(R15*1), X3
	VINSERTI32X4 $1, 2(R13)(R15*1), Z3, Z3
	VINSERTI32X4 $2, 2(R14)(R15*1), Z3, Z3
	VINSERTI32X4 $3, 2(R10)(R15*1), Z3, Z3
	// 4x4 dword transposes in each 128-bit lane: Z(4+e) = dword e of
	// every row, in row order.
	VPUNPCKLDQ  Z1, Z0, Z8
	VPUNPCKHDQ  Z1, Z0, Z9
	VPUNPCKLDQ  Z3, Z2, Z10
	VPUNPCKHDQ  Z3, Z2, Z11
	VPUNPCKLQDQ Z10, Z8, Z4
	VPUNPCKHQDQ Z10, Z8, Z5
	VPUNPCKLQDQ Z11, Z9, Z6
	VPUNPCKHQDQ Z11, Z9, Z7
	// Low nibbles: values 4e..4e+3 (Z8+e); high: 16+4e.. (Z12+e).
	VPSRLD $4, Z4, Z12
	VPSRLD $4, Z5, Z13
	VPSRLD $4, Z6, Z14
	VPSRLD $4, Z7, Z15
	VPANDD Z16, Z4, Z8
	VPANDD Z16, Z5, Z9
	VPANDD Z16, Z6, Z10
	VPANDD Z16, Z7, Z11
	VPANDD Z16, Z12, Z12
	VPANDD Z16, Z13, Z13
	VPANDD Z16, Z14, Z14
	VPANDD Z16, Z15, Z15
	R16SCALES
	R16TOKENS(3)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, R8
	DECQ CX
	JNZ  q40_block
	R16OUT
