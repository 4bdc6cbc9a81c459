//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows8_amd64.h"

// Q5_K (q5kRows8AVX2): the same frame and header, its qh dwords v at
// 1152+32v; value l of sub-block j has bit j of qh byte l as its fifth,
// so a word holds at most 4 products of 31 by 127 (sums of four
// VPMADDUBSW a scale product).

// R5BIT(qh, SH, k): bit j of the qh dword vector at qh(DI) moved to bit 4
// (SH $k: VPSLLW 4-j or VPSRLW j-4) and ORed into Y8 (Y14: 0x10).
#define R5BIT(qh, SH, k) \
	VMOVDQU (qh)(DI), Y13 \
	SH      $k, Y13, Y13 \
	VPAND   Y14, Y13, Y13 \
	VPOR    Y13, Y8, Y8

// R5SUB(LD, w, SH, k, a, j): sub-block j for four tokens, S in Y4-Y7.
#define R5SUB(LD, w, SH, k, a, j) \
	LD(w) \
	R5BIT(1152, SH, k) \
	R4F(a) \
	LD(w+32) \
	R5BIT(1184, SH, k) \
	R4(a+4) \
	LD(w+64) \
	R5BIT(1216, SH, k) \
	R4(a+8) \
	LD(w+96) \
	R5BIT(1248, SH, k) \
	R4(a+12) \
	R4SC(j) \
	LD(w+128) \
	R5BIT(1280, SH, k) \
	R4F(a+16) \
	LD(w+160) \
	R5BIT(1312, SH, k) \
	R4(a+20) \
	LD(w+192) \
	R5BIT(1344, SH, k) \
	R4(a+24) \
	LD(w+224) \
	R5BIT(1376, SH, k) \
	R4(a+28) \
	R4SC(j)

// R5DEC(LD, w, SH, k, j): sub-block j's eight value vectors assembled
// (LD and R5BIT) into scr at 576+256j, for passes of eight tokens or
// more; R5DSUB(a, j) is R5SUB on them.
#define R5DEC1(LD, w, SH, k, qh, off) \
	LD(w) \
	R5BIT(qh, SH, k) \
	VMOVDQU Y8, (off)(R9)

#define R5DEC(LD, w, SH, k, j) \
	R5DEC1(LD, w, SH, k, 1152, 576+256*(j)) \
	R5DEC1(LD, w+32, SH, k, 1184, 576+256*(j)+32) \
	R5DEC1(LD, w+64, SH, k, 1216, 576+256*(j)+64) \
	R5DEC1(LD, w+96, SH, k, 1248, 576+256*(j)+96) \
	R5DEC1(LD, w+128, SH, k, 1280, 576+256*(j)+128) \
	R5DEC1(LD, w+160, SH, k, 1312, 576+256*(j)+160) \
	R5DEC1(LD, w+192, SH, k, 1344, 576+256*(j)+192) \
	R5DEC1(LD, w+224, SH, k, 1376, 576+256*(j)+224)

#define R5D(j, i) \
	VMOVDQU (576+256*(j)+32*(i))(R9), Y8

#define R5DSUB(a, j) \
	R5D(j, 0) \
	R4F(a) \
	R5D(j, 1) \
	R4(a+4) \
	R5D(j, 2) \
	R4(a+8) \
	R5D(j, 3) \
	R4(a+12) \
	R4SC(j) \
	R5D(j, 4) \
	R4F(a+16) \
	R5D(j, 5) \
	R4(a+20) \
	R5D(j, 6) \
	R4(a+24) \
	R5D(j, 7) \
	R4(a+28) \
	R4SC(j)

// R5ONE(LD, w, SH, k, a, j): the same for one token, S in Y4.
#define R5ONE(LD, w, SH, k, a, j) \
	LD(w) \
	R5BIT(1152, SH, k) \
	R1F(a, Y0) \
	LD(w+32) \
	R5BIT(1184, SH, k) \
	R1F(a+4, Y1) \
	LD(w+64) \
	R5BIT(1216, SH, k) \
	R1(a+8, Y0) \
	LD(w+96) \
	R5BIT(1248, SH, k) \
	R1(a+12, Y1) \
	VPADDW   Y1, Y0, Y0 \
	VPMADDWD (32*(j))(R9), Y0, Y0 \
	VPADDD   Y0, Y4, Y4 \
	LD(w+128) \
	R5BIT(1280, SH, k) \
	R1F(a+16, Y0) \
	LD(w+160) \
	R5BIT(1312, SH, k) \
	R1F(a+20, Y1) \
	LD(w+192) \
	R5BIT(1344, SH, k) \
	R1(a+24, Y0) \
	LD(w+224) \
	R5BIT(1376, SH, k) \
	R1(a+28, Y1) \
	VPADDW   Y1, Y0, Y0 \
	VPMADDWD (32*(j))(R9), Y0, Y0 \
	VPADDD   Y0, Y4, Y4

// func q5kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// As q4kRows8AVX2; a packed super-block is 1408 bytes. scr: R8SCALES's
// (0-575), the values assembled at 576 (R5DEC), the tokens' sums at 2624.
TEXT ·q5kRows8AVX2(SB), NOSPLIT, $0-80
	R8ARGS(zero, 2624)
	VMOVDQU      ·r8nib(SB), Y15
	VPBROADCASTD ·r8c10(SB), Y14

block:
	R8PF
	R8PF2
	R8SCALES
	R8TOKS(2624)
	CMPQ R10, $8
	JLT  fewer
	R5DEC(R8LO, 128, VPSLLW, 4, 0)
	R5DEC(R8HI, 128, VPSLLW, 3, 1)
	R5DEC(R8LO, 384, VPSLLW, 2, 2)
	R5DEC(R8HI, 384, VPSLLW, 1, 3)
	R5DEC(R8LO, 640, VPSLLW, 0, 4)
	R5DEC(R8HI, 640, VPSRLW, 1, 5)
	R5DEC(R8LO, 896, VPSRLW, 2, 6)
	R5DEC(R8HI, 896, VPSRLW, 3, 7)

dfour:
	R8FOUR
	R5DSUB(0, 0)
	R5DSUB(32, 1)
	R5DSUB(64, 2)
	R5DSUB(96, 3)
	R5DSUB(128, 4)
	R5DSUB(160, 5)
	R5DSUB(192, 6)
	R5DSUB(224, 7)
	R8DONE4(R8END)
	CMPQ  R10, $4
	JGE   dfour
	JMP   one

fewer:
	CMPQ R10, $4
	JLT  one

four:
	R8FOUR
	R5SUB(R8LO, 128, VPSLLW, 4, 0, 0)
	R5SUB(R8HI, 128, VPSLLW, 3, 32, 1)
	R5SUB(R8LO, 384, VPSLLW, 2, 64, 2)
	R5SUB(R8HI, 384, VPSLLW, 1, 96, 3)
	R5SUB(R8LO, 640, VPSLLW, 0, 128, 4)
	R5SUB(R8HI, 640, VPSRLW, 1, 160, 5)
	R5SUB(R8LO, 896, VPSRLW, 2, 192, 6)
	R5SUB(R8HI, 896, VPSRLW, 3, 224, 7)
	R8LOOP4(R8END)
	R8ONE
	VPXOR Y4, Y4, Y4
	R5ONE(R8LO, 128, VPSLLW, 4, 0, 0)
	R5ONE(R8HI, 128, VPSLLW, 3, 32, 1)
	R5ONE(R8LO, 384, VPSLLW, 2, 64, 2)
	R5ONE(R8HI, 384, VPSLLW, 1, 96, 3)
	R5ONE(R8LO, 640, VPSLLW, 0, 128, 4)
	R5ONE(R8HI, 640, VPSRLW, 1, 160, 5)
	R5ONE(R8LO, 896, VPSRLW, 2, 192, 6)
	R5ONE(R8HI, 896, VPSRLW, 3, 224, 7)
	R8DONE1(R8END)
	JNZ  onetok

next:
	R8NEXT(1408, block)
	ROWS8OUT(write, 2624)
