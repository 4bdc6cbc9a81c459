//go:build amd64 && !purego

#include "textflag.h"

#define R8X 9
#include "int8rows8_amd64.h"
#include "int8rows8iq4_amd64.h"

// iq4xsRows8AVX2 is iq4xsRows8AVXVNNI on AVX2 alone (Zen 2/3), against
// the activations split as q80Rows8AVX2's (splitQ8AVX2: q = 16h + l, per
// sixteen values the h of 0-7, their l, the h of 8-15, their l; 512 bytes
// a super-block): per sub-block and token, the grid entries plus 128 by
// the h, then by the l, each summed in 16 bits (a word at most 16
// products of 241 by 8), times the scale pairs times 16 and the scale
// pairs (VPMADDWD): the same exact sums, so dotIQ4XSGo's bits.

// IQSPASS(ib, o): sub-block ib's values by four tokens' h (o 0) or l (o
// 8), 16-bit sums in Y0-Y3.
#define IQSPASS(ib, o) \
	IQLD(ib, 0, 0) \
	R4F(IQSOFF(ib, 0, 0)+(o)) \
	IQLD(ib, 0, 1) \
	R4(IQSOFF(ib, 0, 1)+(o)) \
	IQLD(ib, 1, 0) \
	R4(IQSOFF(ib, 1, 0)+(o)) \
	IQLD(ib, 1, 1) \
	R4(IQSOFF(ib, 1, 1)+(o)) \
	IQLD(ib, 2, 0) \
	R4(IQSOFF(ib, 2, 0)+(o)) \
	IQLD(ib, 2, 1) \
	R4(IQSOFF(ib, 2, 1)+(o)) \
	IQLD(ib, 3, 0) \
	R4(IQSOFF(ib, 3, 0)+(o)) \
	IQLD(ib, 3, 1) \
	R4(IQSOFF(ib, 3, 1)+(o))

// IQSSUB(ib): sub-block ib for four tokens, S in Y4-Y7: the h sums by 16
// times the scale pairs (scr 576, R4SC's index 18+ib), the l sums by the
// pairs (256: 8+ib).
#define IQSSUB(ib) \
	IQSPASS(ib, 0) \
	R4SC(18+(ib)) \
	IQSPASS(ib, 8) \
	R4SC(8+(ib))

// IQS1PASS(ib, o) and IQS1SUB(ib): the same for one token (BX), in two
// chains, S in Y4.
#define IQS1PASS(ib, o) \
	IQLO(64+32*(4*(ib))) \
	R1F(IQSOFF(ib, 0, 0)+(o), Y0) \
	IQHI(64+32*(4*(ib))) \
	R1F(IQSOFF(ib, 0, 1)+(o), Y1) \
	IQLO(64+32*(4*(ib)+1)) \
	R1(IQSOFF(ib, 1, 0)+(o), Y0) \
	IQHI(64+32*(4*(ib)+1)) \
	R1(IQSOFF(ib, 1, 1)+(o), Y1) \
	IQLO(64+32*(4*(ib)+2)) \
	R1(IQSOFF(ib, 2, 0)+(o), Y0) \
	IQHI(64+32*(4*(ib)+2)) \
	R1(IQSOFF(ib, 2, 1)+(o), Y1) \
	IQLO(64+32*(4*(ib)+3)) \
	R1(IQSOFF(ib, 3, 0)+(o), Y0) \
	IQHI(64+32*(4*(ib)+3)) \
	R1(IQSOFF(ib, 3, 1)+(o), Y1) \
	VPADDW Y1, Y0, Y0

#define IQS1SUB(ib) \
	IQS1PASS(ib, 0) \
	VPMADDWD (576+32*(ib))(R9), Y0, Y0 \
	VPADDD   Y0, Y4, Y4 \
	IQS1PASS(ib, 8) \
	VPMADDWD (256+32*(ib))(R9), Y0, Y0 \
	VPADDD   Y0, Y4, Y4

// func iq4xsRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// The frame of int8rows8_amd64.h, qs the split activations.
TEXT ·iq4xsRows8AVX2(SB), NOSPLIT, $0-80
	IQBEGIN
	IQSPASS(0, 0)
	R4SCF(18)
	IQSPASS(0, 8)
	R4SC(8)
	IQSSUB(1)
	IQSSUB(2)
	IQSSUB(3)
	IQSSUB(4)
	IQSSUB(5)
	IQSSUB(6)
	IQSSUB(7)
	R8LOOP4(IQEND)
	R8ONE
	VPXOR Y4, Y4, Y4
	IQS1SUB(0)
	IQS1SUB(1)
	IQS1SUB(2)
	IQS1SUB(3)
	IQS1SUB(4)
	IQS1SUB(5)
	IQS1SUB(6)
	IQS1SUB(7)
	R8DONE1(IQEND)
	JNZ onetok

next:
	R8NEXT(1088, block)
	ROWS8OUT(write, 3008)
