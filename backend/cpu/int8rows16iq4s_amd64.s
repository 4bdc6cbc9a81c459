//go:build amd64 && !purego

#include "textflag.h"

#define R8X 9
#include "int8rows8_amd64.h"
#include "int8rows8iq4_amd64.h"
#include "int8rows16iq4_amd64.h"

// iq4xsRows16AVX2 is iq4xsRows8AVX2 on two adjacent groups at once, as
// iq4xsRows16AVXVNNI is on AVX-VNNI: three tokens at a time, each
// broadcast of a token's split activations feeding two VPMADDUBSW, one a
// group. Timing the eight-row kernel with twice the products per
// broadcast took 1.5 times as long for twice the work. The same integers
// and float step (the 128s off by BSDOT), so dotIQ4XSGo's bits.
//
// In a sub-block: S Y0-Y5 (the first group's of the three tokens in Y0,
// Y2, Y4), the values Y6 (first group) and Y7, a broadcast Y8, the
// 16-bit sums Y10-Y15 (as S's, plus 10).

// S3W(ib, v, hi): packed vector v of sub-block ib, its low (hi 0) or high
// nibbles' entries, both groups, into Y6 and Y7.
#define S3W(ib, v, hi) \
	VMOVDQU (1664+64*(4*(ib)+(v))+32*(hi))(R9), Y6 \
	VMOVDQU (3712+64*(4*(ib)+(v))+32*(hi))(R9), Y7

// S3TF(a, A, B) and S3T(a, A, B): Y6 and Y7 by the activations' dword at
// a, broadcast, into (or added to) the 16-bit sums A and B.
#define S3TF(a, A, B) \
	VPBROADCASTD a, Y8 \
	VPMADDUBSW   Y8, Y6, A \
	VPMADDUBSW   Y8, Y7, B

#define S3T(a, A, B) \
	VPBROADCASTD a, Y8 \
	VPMADDUBSW   Y8, Y6, Y9 \
	VPADDW       Y9, A, A \
	VPMADDUBSW   Y8, Y7, Y8 \
	VPADDW       Y8, B, B

// S3VF(ib, v, hi, o) and S3V(ib, v, hi, o): the vector by three tokens'
// h (o 0) or l (o 8).
#define S3VF(ib, v, hi, o) \
	S3W(ib, v, hi) \
	S3TF((IQSOFF(ib, v, hi)+(o))(BX), Y10, Y11) \
	S3TF((IQSOFF(ib, v, hi)+(o))(BX)(R8*1), Y12, Y13) \
	S3TF((IQSOFF(ib, v, hi)+(o))(BX)(R8*2), Y14, Y15)

#define S3V(ib, v, hi, o) \
	S3W(ib, v, hi) \
	S3T((IQSOFF(ib, v, hi)+(o))(BX), Y10, Y11) \
	S3T((IQSOFF(ib, v, hi)+(o))(BX)(R8*1), Y12, Y13) \
	S3T((IQSOFF(ib, v, hi)+(o))(BX)(R8*2), Y14, Y15)

// S1VF and S1V: the same for one token (BX).
#define S1VF(ib, v, hi, o) \
	S3W(ib, v, hi) \
	S3TF((IQSOFF(ib, v, hi)+(o))(BX), Y10, Y11)

#define S1V(ib, v, hi, o) \
	S3W(ib, v, hi) \
	S3T((IQSOFF(ib, v, hi)+(o))(BX), Y10, Y11)

// PASS8(VF, V, ib, o): a pass over sub-block ib's eight vectors.
#define PASS8(VF, V, ib, o) \
	VF(ib, 0, 0, o) \
	V(ib, 0, 1, o) \
	V(ib, 1, 0, o) \
	V(ib, 1, 1, o) \
	V(ib, 2, 0, o) \
	V(ib, 2, 1, o) \
	V(ib, 3, 0, o) \
	V(ib, 3, 1, o)

// S3SC(pa, pb, ib): the 16-bit sums by each group's pairs (pa, pb: scr's
// scale pairs, or the pairs times 16, of sub-block ib), added to S.
#define S3SC(pa, pb, ib) \
	VPMADDWD (pa+32*(ib))(R9), Y10, Y10 \
	VPMADDWD (pb+32*(ib))(R9), Y11, Y11 \
	VPMADDWD (pa+32*(ib))(R9), Y12, Y12 \
	VPMADDWD (pb+32*(ib))(R9), Y13, Y13 \
	VPMADDWD (pa+32*(ib))(R9), Y14, Y14 \
	VPMADDWD (pb+32*(ib))(R9), Y15, Y15 \
	VPADDD   Y10, Y0, Y0 \
	VPADDD   Y11, Y1, Y1 \
	VPADDD   Y12, Y2, Y2 \
	VPADDD   Y13, Y3, Y3 \
	VPADDD   Y14, Y4, Y4 \
	VPADDD   Y15, Y5, Y5

#define S1SC(pa, pb, ib) \
	VPMADDWD (pa+32*(ib))(R9), Y10, Y10 \
	VPMADDWD (pb+32*(ib))(R9), Y11, Y11 \
	VPADDD   Y10, Y0, Y0 \
	VPADDD   Y11, Y1, Y1

// S3SUB(ib) and S1SUB(ib): sub-block ib, the h pass by 16 times the scale
// pairs, the l pass by the pairs.
#define S3SUB(ib) \
	PASS8(S3VF, S3V, ib, 0) \
	S3SC(576, 1408, ib) \
	PASS8(S3VF, S3V, ib, 8) \
	S3SC(256, 1088, ib)

#define S1SUB(ib) \
	PASS8(S1VF, S1V, ib, 0) \
	S1SC(576, 1408, ib) \
	PASS8(S1VF, S1V, ib, 8) \
	S1SC(256, 1088, ib)

// S16TOK(da, S0, S1, o): a token's super-block (its 16-sums at SI, d_a at
// da), both groups, the 128s off as OFFEND takes them, into its sums at
// o(AX).
#define S16END(da, pairs, dd, S, acc) \
	BSDOT(pairs) \
	VPSLLD $7, Y9, Y9 \
	VPSUBD Y9, S, S \
	T16END(da, dd, S, acc)

#define S16TOK(da, S0, S1, o) \
	S16END(da, 256, 512, S0, (o)(AX)) \
	S16END(da, 1088, 1344, S1, (o+32)(AX))

#define ZERO2 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1

// func iq4xsRows16AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// The frame of int8rows16iq4_amd64.h, qs the split activations.
TEXT ·iq4xsRows16AVX2(SB), NOSPLIT, $0-80
	R16BEGIN
	ZERO2
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	S3SUB(0)
	S3SUB(1)
	S3SUB(2)
	S3SUB(3)
	S3SUB(4)
	S3SUB(5)
	S3SUB(6)
	S3SUB(7)
	MOVQ DX, SI
	S16TOK((R12), Y0, Y1, 0)
	LEAQ (DX)(R13*1), SI
	S16TOK((R12)(R14*1), Y2, Y3, 64)
	LEAQ (DX)(R13*2), SI
	S16TOK((R12)(R14*2), Y4, Y5, 128)
	R16STEP3
	R16ONE
	ZERO2
	S1SUB(0)
	S1SUB(1)
	S1SUB(2)
	S1SUB(3)
	S1SUB(4)
	S1SUB(5)
	S1SUB(6)
	S1SUB(7)
	MOVQ DX, SI
	S16TOK((R12), Y0, Y1, 0)
	R16STEP1
	R16END
