//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows8_amd64.h"

// q6kRows8AVX2: Q6_K rows packed eight to a group (packQ6K8) against q8_K
// activations on AVX2, each row in a dword lane: dotQ6KGo's integers and
// float step, so its bits. Per super-block the rows' int8 scales are
// decoded once into scr as 16-bit pairs; per token each sub-block of 16
// is four VPMADDUBSW of the 6-bit values (assembled from the packed ql and
// qh dwords) by the token's activations broadcast, summed two at a time in
// 16 bits (a word at most 4 products of 63 by 127), then VPMADDWD by the
// scale pair: s exact; c, the scales by the activations' 16-sums, takes
// off the values' offset of 32.
//
// scr (bytes): 0 the scale pairs (sc_j, sc_j) of sub-blocks 0-15, 512 the
// pairs (sc_2k, sc_2k+1), 768 d as floats, 800 the values assembled
// (Q6DEC, passes of eight tokens or more), 2848 each token's eight sums.

DATA q6nib<>+0(SB)/4, $0x0f0f0f0f
GLOBL q6nib<>(SB), RODATA|NOPTR, $4
DATA q6hi<>+0(SB)/4, $0x30303030
GLOBL q6hi<>(SB), RODATA|NOPTR, $4

// q6same<>+32i: VPSHUFB masks taking byte i of every dword to the high
// byte of both its words; q6two<>+32i (i 0 or 1): bytes 2i and 2i+1 to
// the high bytes of its two words. VPSRAW $8 then sign-extends them.
DATA q6same<>+0(SB)/8, $0x0480048000800080
DATA q6same<>+8(SB)/8, $0x0c800c8008800880
DATA q6same<>+16(SB)/8, $0x0480048000800080
DATA q6same<>+24(SB)/8, $0x0c800c8008800880
DATA q6same<>+32(SB)/8, $0x0580058001800180
DATA q6same<>+40(SB)/8, $0x0d800d8009800980
DATA q6same<>+48(SB)/8, $0x0580058001800180
DATA q6same<>+56(SB)/8, $0x0d800d8009800980
DATA q6same<>+64(SB)/8, $0x0680068002800280
DATA q6same<>+72(SB)/8, $0x0e800e800a800a80
DATA q6same<>+80(SB)/8, $0x0680068002800280
DATA q6same<>+88(SB)/8, $0x0e800e800a800a80
DATA q6same<>+96(SB)/8, $0x0780078003800380
DATA q6same<>+104(SB)/8, $0x0f800f800b800b80
DATA q6same<>+112(SB)/8, $0x0780078003800380
DATA q6same<>+120(SB)/8, $0x0f800f800b800b80
GLOBL q6same<>(SB), RODATA|NOPTR, $128

DATA q6two<>+0(SB)/8, $0x0580048001800080
DATA q6two<>+8(SB)/8, $0x0d800c8009800880
DATA q6two<>+16(SB)/8, $0x0580048001800080
DATA q6two<>+24(SB)/8, $0x0d800c8009800880
DATA q6two<>+32(SB)/8, $0x0780068003800280
DATA q6two<>+40(SB)/8, $0x0f800e800b800a80
DATA q6two<>+48(SB)/8, $0x0780068003800280
DATA q6two<>+56(SB)/8, $0x0f800e800b800a80
GLOBL q6two<>(SB), RODATA|NOPTR, $64

// Q6PF prefetches a super-block a few ahead: its 27 lines (R8PF's).
#define Q6PF \
	R8PF \
	PF9(13440)

// Q6SC(k): scale dwords k (sub-blocks 4k..4k+3) into their pairs.
#define Q6SC(k) \
	VMOVDQU (32*(k))(DI), Y0 \
	VPSHUFB q6same<>+0(SB), Y0, Y1 \
	VPSHUFB q6same<>+32(SB), Y0, Y2 \
	VPSHUFB q6same<>+64(SB), Y0, Y3 \
	VPSHUFB q6same<>+96(SB), Y0, Y4 \
	VPSHUFB q6two<>+0(SB), Y0, Y5 \
	VPSHUFB q6two<>+32(SB), Y0, Y6 \
	VPSRAW  $8, Y1, Y1 \
	VPSRAW  $8, Y2, Y2 \
	VPSRAW  $8, Y3, Y3 \
	VPSRAW  $8, Y4, Y4 \
	VPSRAW  $8, Y5, Y5 \
	VPSRAW  $8, Y6, Y6 \
	VMOVDQU Y1, (128*(k))(R9) \
	VMOVDQU Y2, (128*(k)+32)(R9) \
	VMOVDQU Y3, (128*(k)+64)(R9) \
	VMOVDQU Y4, (128*(k)+96)(R9) \
	VMOVDQU Y5, (512+64*(k))(R9) \
	VMOVDQU Y6, (512+64*(k)+32)(R9)

// Q6W0..Q6W3(ql, qh): values 32g+4v.. of a half (g = 0..3) for the rows,
// into Y8: ql's low (g 0, 1) or high (2, 3) nibbles, qh's bits 2g and
// 2g+1 as bits 4 and 5 (Y15: 0x0f, Y14: 0x30; Y13 clobbered).
#define Q6W0(ql, qh) \
	VPAND   (ql)(DI), Y15, Y8 \
	VMOVDQU (qh)(DI), Y13 \
	VPSLLW  $4, Y13, Y13 \
	VPAND   Y14, Y13, Y13 \
	VPOR    Y13, Y8, Y8

#define Q6W1(ql, qh) \
	VPAND   (ql)(DI), Y15, Y8 \
	VMOVDQU (qh)(DI), Y13 \
	VPSLLW  $2, Y13, Y13 \
	VPAND   Y14, Y13, Y13 \
	VPOR    Y13, Y8, Y8

#define Q6W2(ql, qh) \
	VMOVDQU (ql)(DI), Y8 \
	VPSRLW  $4, Y8, Y8 \
	VPAND   Y15, Y8, Y8 \
	VPAND   (qh)(DI), Y14, Y13 \
	VPOR    Y13, Y8, Y8

#define Q6W3(ql, qh) \
	VMOVDQU (ql)(DI), Y8 \
	VPSRLW  $4, Y8, Y8 \
	VPAND   Y15, Y8, Y8 \
	VMOVDQU (qh)(DI), Y13 \
	VPSRLW  $2, Y13, Y13 \
	VPAND   Y14, Y13, Y13 \
	VPOR    Y13, Y8, Y8

// T1S(j): one token's sub-block sums (Y0) by sub-block j's scale pairs,
// added to S in Y4. The four-token steps are R4F, R4 and R4SC; the
// one-token ones R1F and R1 into Y0 (int8rows8_amd64.h).
#define T1S(j) \
	VPMADDWD (32*(j))(R9), Y0, Y0 \
	VPADDD   Y0, Y4, Y4

#define T1F(a) R1F(a, Y0)

#define T1A(a) R1(a, Y0)

// Q6QUARTER(W, F, A, S, ql, qh, a, j): values 32g.. of a half (W its Q6W
// macro) at packed offsets ql and qh, activations a: sub-blocks j and j+1,
// two VPMADDUBSW summed in 16 bits a scale product.
#define Q6QUARTER(W, F, A, S, ql, qh, a, j) \
	W(ql, qh) \
	F(a) \
	W(ql+32, qh+32) \
	A(a+4) \
	S(j) \
	W(ql+64, qh+64) \
	F(a+8) \
	W(ql+96, qh+96) \
	A(a+12) \
	S(j) \
	W(ql+128, qh+128) \
	F(a+16) \
	W(ql+160, qh+160) \
	A(a+20) \
	S(j+1) \
	W(ql+192, qh+192) \
	F(a+24) \
	W(ql+224, qh+224) \
	A(a+28) \
	S(j+1)

// Q6HALF(F, A, S, h): half h's four quarters (ql at 128+512h, the second
// 32 bytes at +256; qh at 1152+256h).
#define Q6HALF(F, A, S, h) \
	Q6QUARTER(Q6W0, F, A, S, 128+512*(h), 1152+256*(h), 128*(h), 8*(h)) \
	Q6QUARTER(Q6W1, F, A, S, 384+512*(h), 1152+256*(h), 128*(h)+32, 8*(h)+2) \
	Q6QUARTER(Q6W2, F, A, S, 128+512*(h), 1152+256*(h), 128*(h)+64, 8*(h)+4) \
	Q6QUARTER(Q6W3, F, A, S, 384+512*(h), 1152+256*(h), 128*(h)+96, 8*(h)+6)

// Q6D(ql, hi) loads the values Q6DEC assembled from the ql dword vector
// at ql (hi: its high nibbles') into Y8.
#define Q6DOFF(ql, hi) (800+2*((ql)-128)+32*(hi))

#define Q6D(ql, hi) \
	VMOVDQU Q6DOFF(ql, hi)(R9), Y8

// Q6DEC1(W, ql, qh, hi): one vector assembled (W a Q6W macro) into scr.
#define Q6DEC1(W, ql, qh, hi) \
	W(ql, qh) \
	VMOVDQU Y8, Q6DOFF(ql, hi)(R9)

#define Q6DECQ(W, ql, qh, hi) \
	Q6DEC1(W, ql, qh, hi) \
	Q6DEC1(W, ql+32, qh+32, hi) \
	Q6DEC1(W, ql+64, qh+64, hi) \
	Q6DEC1(W, ql+96, qh+96, hi) \
	Q6DEC1(W, ql+128, qh+128, hi) \
	Q6DEC1(W, ql+160, qh+160, hi) \
	Q6DEC1(W, ql+192, qh+192, hi) \
	Q6DEC1(W, ql+224, qh+224, hi)

#define Q6DECH(h) \
	Q6DECQ(Q6W0, 128+512*(h), 1152+256*(h), 0) \
	Q6DECQ(Q6W1, 384+512*(h), 1152+256*(h), 0) \
	Q6DECQ(Q6W2, 128+512*(h), 1152+256*(h), 1) \
	Q6DECQ(Q6W3, 384+512*(h), 1152+256*(h), 1)

// Q6DEC assembles the super-block's 64 value vectors into scr once, for
// passes of eight tokens or more: then each group of four reads them
// rather than assembling each again (four operations a vector).
#define Q6DEC \
	Q6DECH(0) \
	Q6DECH(1)

// Q6DQUARTER and Q6DHALF are Q6QUARTER and Q6HALF on the assembled values.
#define Q6DQUARTER(hi, F, A, S, ql, a, j) \
	Q6D(ql, hi) \
	F(a) \
	Q6D(ql+32, hi) \
	A(a+4) \
	S(j) \
	Q6D(ql+64, hi) \
	F(a+8) \
	Q6D(ql+96, hi) \
	A(a+12) \
	S(j) \
	Q6D(ql+128, hi) \
	F(a+16) \
	Q6D(ql+160, hi) \
	A(a+20) \
	S(j+1) \
	Q6D(ql+192, hi) \
	F(a+24) \
	Q6D(ql+224, hi) \
	A(a+28) \
	S(j+1)

#define Q6DHALF(F, A, S, h) \
	Q6DQUARTER(0, F, A, S, 128+512*(h), 128*(h), 8*(h)) \
	Q6DQUARTER(0, F, A, S, 384+512*(h), 128*(h)+32, 8*(h)+2) \
	Q6DQUARTER(1, F, A, S, 128+512*(h), 128*(h)+64, 8*(h)+4) \
	Q6DQUARTER(1, F, A, S, 384+512*(h), 128*(h)+96, 8*(h)+6)

// Q6END(S, acc): a token's super-block, the offset 32 off (OFFEND).
#define Q6END(S, acc) OFFEND(512, 5, 768, S, acc)

// func q6kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// The frame of int8rows8_amd64.h; a packed super-block is 1680 bytes.
TEXT ·q6kRows8AVX2(SB), NOSPLIT, $0-80
	R8ARGS(zero, 2848)

block:
	Q6PF
	Q6SC(0)
	Q6SC(1)
	Q6SC(2)
	Q6SC(3)
	VMOVDQU      1664(DI), X0
	VCVTPH2PS    X0, Y0
	VMOVUPS      Y0, 768(R9)
	VPBROADCASTD q6nib<>(SB), Y15
	VPBROADCASTD q6hi<>(SB), Y14
	R8TOKS(2848)
	CMPQ         R10, $8
	JLT          fewer
	Q6DEC

dfour:
	R8FOUR
	Q6DHALF(R4F, R4, R4SC, 0)
	Q6DHALF(R4F, R4, R4SC, 1)
	R8DONE4(Q6END)
	CMPQ  R10, $4
	JGE   dfour
	JMP   one

fewer:
	CMPQ R10, $4
	JLT  one

four:
	R8FOUR
	Q6HALF(R4F, R4, R4SC, 0)
	Q6HALF(R4F, R4, R4SC, 1)
	R8LOOP4(Q6END)
	R8ONE
	VPXOR  Y4, Y4, Y4
	Q6HALF(T1F, T1A, T1S, 0)
	Q6HALF(T1F, T1A, T1S, 1)
	R8DONE1(Q6END)
	JNZ    onetok

next:
	R8NEXT(1680, block)
	ROWS8OUT(write, 2848)
