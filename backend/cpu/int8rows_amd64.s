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
DATA ·r16perm+0(SB)/8, $0x0000000100000000
DATA ·r16perm+8(SB)/8, $0x0000000300000002
DATA ·r16perm+16(SB)/8, $0x0000000900000008
DATA ·r16perm+24(SB)/8, $0x0000000b0000000a
DATA ·r16perm+32(SB)/8, $0x0000000500000004
DATA ·r16perm+40(SB)/8, $0x0000000700000006
DATA ·r16perm+48(SB)/8, $0x0000000d0000000c
DATA ·r16perm+56(SB)/8, $0x0000000f0000000e
GLOBL ·r16perm(SB), RODATA|NOPTR, $64

// iq4nlu8: IQ4_NL's grid plus 128, as unsigned bytes.
DATA ·iq4nlu8+0(SB)/8, $0x766a5d4f3f2d1801
DATA ·iq4nlu8+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL ·iq4nlu8(SB), RODATA|NOPTR, $16

// mxfp4u8: MXFP4's grid (E2M1 doubled) plus 128, as unsigned bytes.
DATA ·mxfp4u8+0(SB)/8, $0x8c88868483828180
DATA ·mxfp4u8+8(SB)/8, $0x74787a7c7d7e7f80
GLOBL ·mxfp4u8(SB), RODATA|NOPTR, $16

DATA ·r16c63+0(SB)/4, $63
GLOBL ·r16c63(SB), RODATA|NOPTR, $4
DATA ·r16c15+0(SB)/4, $15
GLOBL ·r16c15(SB), RODATA|NOPTR, $4
DATA ·r16c3+0(SB)/4, $3
GLOBL ·r16c3(SB), RODATA|NOPTR, $4
DATA ·r16c32+0(SB)/4, $32
GLOBL ·r16c32(SB), RODATA|NOPTR, $4
DATA ·r16c03+0(SB)/4, $0x03030303
GLOBL ·r16c03(SB), RODATA|NOPTR, $4
DATA ·r16c04+0(SB)/4, $0x04040404
GLOBL ·r16c04(SB), RODATA|NOPTR, $4
DATA ·r16cf0000+0(SB)/4, $0x000f0000
GLOBL ·r16cf0000(SB), RODATA|NOPTR, $4
// r16cm4: words (-4, 0) in every dword: VPMADDWD of a broadcast word w
// gives -4w (Q3_K's offset).
DATA ·r16cm4+0(SB)/8, $0x0000fffc0000fffc
DATA ·r16cm4+8(SB)/8, $0x0000fffc0000fffc
DATA ·r16cm4+16(SB)/8, $0x0000fffc0000fffc
DATA ·r16cm4+24(SB)/8, $0x0000fffc0000fffc
DATA ·r16cm4+32(SB)/8, $0x0000fffc0000fffc
DATA ·r16cm4+40(SB)/8, $0x0000fffc0000fffc
DATA ·r16cm4+48(SB)/8, $0x0000fffc0000fffc
DATA ·r16cm4+56(SB)/8, $0x0000fffc0000fffc
GLOBL ·r16cm4(SB), RODATA|NOPTR, $64
DATA ·r16c0f+0(SB)/4, $0x0f0f0f0f
GLOBL ·r16c0f(SB), RODATA|NOPTR, $4
DATA ·r16c30+0(SB)/4, $0x30303030
GLOBL ·r16c30(SB), RODATA|NOPTR, $4
DATA ·r16c10+0(SB)/4, $0x10101010
GLOBL ·r16c10(SB), RODATA|NOPTR, $4

// r16iota: rows in order (Q4_0's transposition).
DATA ·r16iota+0(SB)/8, $0x0000000100000000
DATA ·r16iota+8(SB)/8, $0x0000000300000002
DATA ·r16iota+16(SB)/8, $0x0000000500000004
DATA ·r16iota+24(SB)/8, $0x0000000700000006
DATA ·r16iota+32(SB)/8, $0x0000000900000008
DATA ·r16iota+40(SB)/8, $0x0000000b0000000a
DATA ·r16iota+48(SB)/8, $0x0000000d0000000c
DATA ·r16iota+56(SB)/8, $0x0000000f0000000e
GLOBL ·r16iota(SB), RODATA|NOPTR, $64

#include "int8rows_amd64.h"

// func q80Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Rows w, w+rb, ..., w+15rb; token t's activations at qs+t*qstride, its
// block scales and negated sums at d and nsum + t*dstride (elements); acc:
// 16*ntok floats of scratch; out[t*ostride+j]: row j's result for token t.
TEXT ·q80Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16perm(SB))
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z16

q80_block:
	R16PF9(544)
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
	R16SETUP(·r16iota(SB))
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
	R16SETUP(·r16iota(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 ·iq4nlu8(SB), Z28
iq4nl_block:
	R16PF(288)
	R16NIBBLES(2)
	R16GRID
	R16SCALES
	R16TOKENS(7)
	R16STEP(18)
	JNZ  iq4nl_block
	R16OUT

// func mxfp4Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// MXFP4 (17-byte blocks: an E8M0 scale, then IQ4_NL's nibble layout):
// VPSHUFB looks up mxfp4u8 (the grid plus 128); the offset is 128.
TEXT ·mxfp4Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16iota(SB))
	R16E8SETUP
mxfp4_block:
	R16PF(272)
	R16NIBBLES(1)
	R16GRID
	R16SCALESE8
	R16TOKENS(7)
	R16STEP(17)
	JNZ  mxfp4_block
	R16OUT

// func q41Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Q4_1 (20-byte blocks: scale, min, nibbles): unsigned values, then the
// min times the activations' sum.
TEXT ·q41Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16iota(SB))
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
	R16SETUP(·r16iota(SB))
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
	R16SETUP(·r16iota(SB))
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
