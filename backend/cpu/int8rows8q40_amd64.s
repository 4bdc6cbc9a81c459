//go:build amd64 && !purego

#include "textflag.h"
#include "int8half_amd64.h"
#include "int8rows8_amd64.h"
#include "avxvnni_amd64.h"

// q40Rows8AVX2: half of a group of sixteen Q4_0 rows packed for the VNNI
// row kernels (packQ40: per block the sixteen fp16 scales, then dword v
// of row j at 32+64v+4j) against q8_0 activations on AVX2, eight rows in
// dword lanes: rows32Go's bits, as the VNNI kernels'. Per token and block,
// eight VPMADDUBSW of the nibbles by the token's activations broadcast,
// summed in 16 bits (a word at most 16 products of 15 by 127), widened,
// less 8 times the activations' sum (their nsum), times d_w d_a.

DATA ·r8ones+0(SB)/4, $0x00010001
GLOBL ·r8ones(SB), RODATA|NOPTR, $4

// Q4LO(v) and Q4HI(v): dword v's low and high nibbles of the half into
// Y8 (DI the block's scales of the half, R9 = 16h: its dwords at
// 32+64v+R9(DI); Y15: 0x0f).
#define Q4LO(v) \
	VPAND (32+64*(v))(DI)(R9*1), Y15, Y8

#define Q4HI(v) \
	VMOVDQU (32+64*(v))(DI)(R9*1), Y8 \
	VPSRLW  $4, Y8, Y8 \
	VPAND   Y15, Y8, Y8

// Q4END(P, nsum, d, acc): a token's block, its 16-bit sums P widened
// (Y14: ones), the values' offset 8.
#define Q4END(P, nsum, d, acc) \
	VPMADDWD Y14, P, P \
	HALFEND(P, nsum, 3, d, acc)

// Q4BLOCK: a block against four tokens (HALF4PASS).
#define Q4BLOCK \
	VCVTPH2PS (DI), Y13 \
	Q4LO(0) \
	R4F(0) \
	Q4LO(1) \
	R4(4) \
	Q4LO(2) \
	R4(8) \
	Q4LO(3) \
	R4(12) \
	Q4HI(0) \
	R4(16) \
	Q4HI(1) \
	R4(20) \
	Q4HI(2) \
	R4(24) \
	Q4HI(3) \
	R4(28) \
	HALF4ENDS(Q4END)

// func q40Rows8AVX2(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// The frame of int8half_amd64.h; a packed block is 288 bytes.
TEXT ·q40Rows8AVX2(SB), NOSPLIT, $0-80
	HALFARGS
	VPBROADCASTD ·r8c0f(SB), Y15
	VPBROADCASTD ·r8ones(SB), Y14
	CMPQ R10, $4
	JLT  one

four:
	HALF4BEGIN
	HALF4PASS(HALFPF5, Q4BLOCK, 288, fourpf, fourblock, fourend)
	HALF4NEXT
	HALFONE

oneblock:
	VCVTPH2PS    (DI), Y13
	Q4LO(0)
	VPBROADCASTD (BX), Y9
	VPMADDUBSW   Y9, Y8, Y0
	Q4LO(1)
	VPBROADCASTD 4(BX), Y9
	VPMADDUBSW   Y9, Y8, Y1
	Q4LO(2)
	VPBROADCASTD 8(BX), Y9
	VPMADDUBSW   Y9, Y8, Y9
	VPADDW       Y9, Y0, Y0
	Q4LO(3)
	VPBROADCASTD 12(BX), Y9
	VPMADDUBSW   Y9, Y8, Y9
	VPADDW       Y9, Y1, Y1
	Q4HI(0)
	VPBROADCASTD 16(BX), Y9
	VPMADDUBSW   Y9, Y8, Y9
	VPADDW       Y9, Y0, Y0
	Q4HI(1)
	VPBROADCASTD 20(BX), Y9
	VPMADDUBSW   Y9, Y8, Y9
	VPADDW       Y9, Y1, Y1
	Q4HI(2)
	VPBROADCASTD 24(BX), Y9
	VPMADDUBSW   Y9, Y8, Y9
	VPADDW       Y9, Y0, Y0
	Q4HI(3)
	VPBROADCASTD 28(BX), Y9
	VPMADDUBSW   Y9, Y8, Y9
	VPADDW       Y9, Y1, Y1
	VPADDW       Y1, Y0, Y0
	Q4END(Y0, (DX), (R12), Y4)
	HALFDONE(288)

// V4(a): the nibbles in Y8 by VPDPBUSD against four tokens' activations
// at a (R4BC), added to Y0-Y3.
#define V4(a) \
	R4BC(a) \
	VPDPBUSDY(0, 8, 9) \
	VPDPBUSDY(1, 8, 10) \
	VPDPBUSDY(2, 8, 11) \
	VPDPBUSDY(3, 8, 12)

// V1(a, acc): the same for one token (BX) into Y(acc).
#define V1(a, acc) \
	VPBROADCASTD (a)(BX), Y9 \
	VPDPBUSDY(acc, 8, 9)

// Q4VEND(P, nsum, d, acc): a token's block, the values' offset 8.
#define Q4VEND(P, nsum, d, acc) HALFEND(P, nsum, 3, d, acc)

// Q4VBLOCK: a block against four tokens (HALF4PASS).
#define Q4VBLOCK \
	VCVTPH2PS (DI), Y13 \
	VPXOR     Y0, Y0, Y0 \
	VPXOR     Y1, Y1, Y1 \
	VPXOR     Y2, Y2, Y2 \
	VPXOR     Y3, Y3, Y3 \
	Q4LO(0) \
	V4(0) \
	Q4LO(1) \
	V4(4) \
	Q4LO(2) \
	V4(8) \
	Q4LO(3) \
	V4(12) \
	Q4HI(0) \
	V4(16) \
	Q4HI(1) \
	V4(20) \
	Q4HI(2) \
	V4(24) \
	Q4HI(3) \
	V4(28) \
	HALF4ENDS(Q4VEND)

// func q40Rows8AVXVNNI(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// q40Rows8AVX2 with AVX-VNNI: per token and block eight VPDPBUSD of the
// nibbles by its activations, exact in 32 bits, so the sums and the float
// step are the same.
TEXT ·q40Rows8AVXVNNI(SB), NOSPLIT, $0-80
	HALFARGS
	VPBROADCASTD ·r8c0f(SB), Y15
	CMPQ R10, $4
	JLT  vone

vfour:
	HALF4BEGIN
	HALF4PASS(HALFPF5, Q4VBLOCK, 288, vfourpf, vfourblock, vfourend)
	HALF4END
	CMPQ R10, $4
	JGE  vfour

vone:
	TESTQ R10, R10
	JZ    vdone

vonetok:
	HALF1BEGIN

voneblock:
	VCVTPH2PS (DI), Y13
	VPXOR     Y0, Y0, Y0
	VPXOR     Y1, Y1, Y1
	Q4LO(0)
	V1(0, 0)
	Q4LO(1)
	V1(4, 1)
	Q4LO(2)
	V1(8, 0)
	Q4LO(3)
	V1(12, 1)
	Q4HI(0)
	V1(16, 0)
	Q4HI(1)
	V1(20, 1)
	Q4HI(2)
	V1(24, 0)
	Q4HI(3)
	V1(28, 1)
	VPADDD    Y1, Y0, Y0
	Q4VEND(Y0, (DX), (R12), Y4)
	HALF1STEP(288)
	JNZ       voneblock
	HALF1END
	JNZ       vonetok

vdone:
	VZEROUPPER
	RET
