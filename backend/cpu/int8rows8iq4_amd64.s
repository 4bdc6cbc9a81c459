//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows8_amd64.h"
#include "avxvnni_amd64.h"
#include "int8rows8iq4_amd64.h"

// iq4xsRows8AVXVNNI: IQ4_XS rows packed eight to a group (packIQ4XS8)
// against q8_K activations on AVX-VNNI, each row in a dword lane:
// dotIQ4XSGo's integers and float step, so its bits. Per super-block the
// rows' 6-bit scales are decoded once into scr; per token each sub-block
// is eight VPDPBUSD of the values' grid entries plus 128 (a VPSHUFB of the
// nibbles, unsigned; for four tokens at a time decoded once a
// super-block, IQDEC) by the token's activations broadcast, exact in 32
// bits, times the scale (VPMULLD); the 128s come off as 128 times the
// scales by the activations' 16-sums.
// scr: int8rows8iq4_amd64.h's.

// IQ4T(a): Y8 by four tokens' activations at a (R4BC), added to Y0-Y3.
#define IQ4T(a) \
	R4BC(a) \
	VPDPBUSDY(0, 8, 9) \
	VPDPBUSDY(1, 8, 10) \
	VPDPBUSDY(2, 8, 11) \
	VPDPBUSDY(3, 8, 12)

// IQ4V(ib, v): packed dword v of sub-block ib (values 4v.. and 16+4v..)
// for four tokens.
#define IQ4V(ib, v) \
	IQLD(ib, v, 0) \
	IQ4T(32*(ib)+4*(v)) \
	IQLD(ib, v, 1) \
	IQ4T(32*(ib)+16+4*(v))

// IQ4NEG stores the four tokens' -128 times each sub-block's activation
// sum (pairs of their 16-sums, DX, R13 apart) at scr 2880, 32 bytes a
// token: the sub-block sums start there, so the 128s come off in the
// integers the scale multiplies, and the float step has no BSDOT.
#define IQ4NEG \
	VMOVDQU      iq4m128<>(SB), Y8 \
	VPMADDWD     (DX), Y8, Y0 \
	VPMADDWD     (DX)(R13*1), Y8, Y1 \
	LEAQ         (DX)(R13*2), SI \
	VPMADDWD     (SI), Y8, Y2 \
	VPMADDWD     (SI)(R13*1), Y8, Y3 \
	VMOVDQU      Y0, 2880(R9) \
	VMOVDQU      Y1, 2912(R9) \
	VMOVDQU      Y2, 2944(R9) \
	VMOVDQU      Y3, 2976(R9)

// IQ4SUB(ib): sub-block ib for four tokens, its sums in Y0-Y3.
#define IQ4SUB(ib) \
	VPBROADCASTD (2880+4*(ib))(R9), Y0 \
	VPBROADCASTD (2912+4*(ib))(R9), Y1 \
	VPBROADCASTD (2944+4*(ib))(R9), Y2 \
	VPBROADCASTD (2976+4*(ib))(R9), Y3 \
	IQ4V(ib, 0) \
	IQ4V(ib, 1) \
	IQ4V(ib, 2) \
	IQ4V(ib, 3)

// IQ4SCF(ib) and IQ4SC(ib): the sums times sub-block ib's scales into
// (or added to) S in Y4-Y7.
#define IQ4SCF(ib) \
	VPMULLD (32*(ib))(R9), Y0, Y4 \
	VPMULLD (32*(ib))(R9), Y1, Y5 \
	VPMULLD (32*(ib))(R9), Y2, Y6 \
	VPMULLD (32*(ib))(R9), Y3, Y7

#define IQ4SC(ib) \
	VPMULLD (32*(ib))(R9), Y0, Y0 \
	VPMULLD (32*(ib))(R9), Y1, Y1 \
	VPMULLD (32*(ib))(R9), Y2, Y2 \
	VPMULLD (32*(ib))(R9), Y3, Y3 \
	VPADDD  Y0, Y4, Y4 \
	VPADDD  Y1, Y5, Y5 \
	VPADDD  Y2, Y6, Y6 \
	VPADDD  Y3, Y7, Y7

// IQ4END(S, acc): a token's super-block, its 128s off already.
#define IQ4END(S, acc) F8END(512, S, acc)

// IQ1V(ib, v) and IQ1SUB(ib): the same for one token (BX), in two chains
// (Y0 low nibbles, Y1 high), then added in Y0.
#define IQ1V(ib, v) \
	IQLO(64+32*(4*(ib)+(v))) \
	VPBROADCASTD (32*(ib)+4*(v))(BX), Y9 \
	VPDPBUSDY(0, 8, 9) \
	IQHI(64+32*(4*(ib)+(v))) \
	VPBROADCASTD (32*(ib)+16+4*(v))(BX), Y9 \
	VPDPBUSDY(1, 8, 9)

#define IQ1SUB(ib) \
	VPXOR  Y0, Y0, Y0 \
	VPXOR  Y1, Y1, Y1 \
	IQ1V(ib, 0) \
	IQ1V(ib, 1) \
	IQ1V(ib, 2) \
	IQ1V(ib, 3) \
	VPADDD Y1, Y0, Y0

// func iq4xsRows8AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
TEXT ·iq4xsRows8AVXVNNI(SB), NOSPLIT, $0-80
	IQBEGIN
	IQ4NEG
	IQ4SUB(0)
	IQ4SCF(0)
	IQ4SUB(1)
	IQ4SC(1)
	IQ4SUB(2)
	IQ4SC(2)
	IQ4SUB(3)
	IQ4SC(3)
	IQ4SUB(4)
	IQ4SC(4)
	IQ4SUB(5)
	IQ4SC(5)
	IQ4SUB(6)
	IQ4SC(6)
	IQ4SUB(7)
	IQ4SC(7)
	R8LOOP4(IQ4END)
	R8ONE
	IQ1SUB(0)
	VMOVDQA Y0, Y4
	VPMULLD (R9), Y4, Y4
	IQ1SUB(1)
	VPMULLD 32(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(2)
	VPMULLD 64(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(3)
	VPMULLD 96(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(4)
	VPMULLD 128(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(5)
	VPMULLD 160(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(6)
	VPMULLD 192(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(7)
	VPMULLD 224(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	R8DONE1(IQEND)
	JNZ onetok

next:
	R8NEXT(1088, block)
	ROWS8OUT(write, 3008)
