//go:build amd64 && !purego

#include "textflag.h"

// AVX2 dequantizers for the K-quants, bit-identical to package quant's Go
// code: each value is an int converted exactly to float, multiplied by its
// sub-block scale and (Q4_K) then less its min, with the same single
// roundings (VMULPS then VSUBPS: no FMA).

// func q4kPairAVX2(q *byte, d1, m1, d2, m2 float32, y *float32)
// 32 bytes of nibbles: y[0:32] = d1*lo - m1, y[32:64] = d2*hi - m2.
TEXT ·q4kPairAVX2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	VBROADCASTSS d1+8(FP), Y8
	VBROADCASTSS m1+12(FP), Y9
	VBROADCASTSS d2+16(FP), Y10
	VBROADCASTSS m2+20(FP), Y11
	MOVQ y+24(FP), DI
	MOVL $15, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12

#define Q4KGROUP(off) \
	VPMOVZXBD off(SI), Y0; \
	VPAND Y12, Y0, Y1; \
	VPSRLD $4, Y0, Y2; \
	VCVTDQ2PS Y1, Y1; \
	VCVTDQ2PS Y2, Y2; \
	VMULPS Y8, Y1, Y1; \
	VMULPS Y10, Y2, Y2; \
	VSUBPS Y9, Y1, Y1; \
	VSUBPS Y11, Y2, Y2; \
	VMOVUPS Y1, ((off)*4)(DI); \
	VMOVUPS Y2, (128+(off)*4)(DI)

	Q4KGROUP(0)
	Q4KGROUP(8)
	Q4KGROUP(16)
	Q4KGROUP(24)
	VZEROUPPER
	RET

// func q6kHalfAVX2(ql, qh *byte, sc *float32, y *float32)
// Half a Q6_K block: 64 bytes of low nibbles, 32 of high bit pairs, eight
// scale multipliers (d times the int8 scale), 128 outputs.
TEXT ·q6kHalfAVX2(SB), NOSPLIT, $0-32
	MOVQ ql+0(FP), SI
	MOVQ qh+8(FP), DX
	MOVQ sc+16(FP), BX
	MOVQ y+24(FP), DI
	MOVL $15, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $3, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $32, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

// Q6KOUT finishes one output group: low bits in Y3, high pair in Y4 (already
// shifted into bits 0-1), scale at sc[s], stored at y[o].
#define Q6KOUT(s, o) \
	VPAND Y13, Y4, Y4; \
	VPSLLD $4, Y4, Y4; \
	VPOR Y4, Y3, Y3; \
	VPSUBD Y14, Y3, Y3; \
	VCVTDQ2PS Y3, Y3; \
	VBROADCASTSS ((s)*4)(BX), Y5; \
	VMULPS Y5, Y3, Y3; \
	VMOVUPS Y3, ((o)*4)(DI)

#define Q6KGROUP(l, is) \
	VPMOVZXBD l(SI), Y0; \
	VPMOVZXBD (32+l)(SI), Y1; \
	VPMOVZXBD l(DX), Y2; \
	VPAND Y12, Y0, Y3; \
	VMOVDQU Y2, Y4; \
	Q6KOUT(is, l); \
	VPAND Y12, Y1, Y3; \
	VPSRLD $2, Y2, Y4; \
	Q6KOUT(is+2, 32+l); \
	VPSRLD $4, Y0, Y3; \
	VPSRLD $4, Y2, Y4; \
	Q6KOUT(is+4, 64+l); \
	VPSRLD $4, Y1, Y3; \
	VPSRLD $6, Y2, Y4; \
	Q6KOUT(is+6, 96+l)

	Q6KGROUP(0, 0)
	Q6KGROUP(8, 0)
	Q6KGROUP(16, 1)
	Q6KGROUP(24, 1)
	VZEROUPPER
	RET

// func q5kPairAVX2(ql, qh *byte, shift int, d1, m1, d2, m2 float32, y *float32)
// Q5_K's pair of sub-blocks: 32 bytes of nibbles in ql, the fifth bits in
// qh at bit shift (low nibbles) and shift+1 (high nibbles).
TEXT ·q5kPairAVX2(SB), NOSPLIT, $0-48
	MOVQ ql+0(FP), SI
	MOVQ qh+8(FP), DX
	MOVQ shift+16(FP), X15
	VBROADCASTSS d1+24(FP), Y8
	VBROADCASTSS m1+28(FP), Y9
	VBROADCASTSS d2+32(FP), Y10
	VBROADCASTSS m2+36(FP), Y11
	MOVQ y+40(FP), DI
	MOVL $15, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $1, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

#define Q5KGROUP(off) \
	VPMOVZXBD off(SI), Y0; \
	VPMOVZXBD off(DX), Y6; \
	VPSRLD X15, Y6, Y6; \
	VPAND Y12, Y0, Y1; \
	VPSRLD $4, Y0, Y2; \
	VPAND Y13, Y6, Y3; \
	VPSLLD $4, Y3, Y3; \
	VPOR Y3, Y1, Y1; \
	VPSRLD $1, Y6, Y3; \
	VPAND Y13, Y3, Y3; \
	VPSLLD $4, Y3, Y3; \
	VPOR Y3, Y2, Y2; \
	VCVTDQ2PS Y1, Y1; \
	VCVTDQ2PS Y2, Y2; \
	VMULPS Y8, Y1, Y1; \
	VMULPS Y10, Y2, Y2; \
	VSUBPS Y9, Y1, Y1; \
	VSUBPS Y11, Y2, Y2; \
	VMOVUPS Y1, ((off)*4)(DI); \
	VMOVUPS Y2, (128+(off)*4)(DI)

	Q5KGROUP(0)
	Q5KGROUP(8)
	Q5KGROUP(16)
	Q5KGROUP(24)
	VZEROUPPER
	RET

// func q40BlocksAVX2(src *byte, dst *float32, nblocks int)
// Q4_0: y[j] = (lo-8)*d, y[j+16] = (hi-8)*d for each 18-byte block.
TEXT ·q40BlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nblocks+16(FP), CX
	MOVL $15, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $8, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	TESTQ CX, CX
	JZ    q40_done

q40_loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X0
	VCVTPH2PS X0, X0
	VBROADCASTSS X0, Y0

#define Q40GROUP(off) \
	VPMOVZXBD (2+off)(SI), Y1; \
	VPAND Y12, Y1, Y2; \
	VPSRLD $4, Y1, Y3; \
	VPSUBD Y13, Y2, Y2; \
	VPSUBD Y13, Y3, Y3; \
	VCVTDQ2PS Y2, Y2; \
	VCVTDQ2PS Y3, Y3; \
	VMULPS Y0, Y2, Y2; \
	VMULPS Y0, Y3, Y3; \
	VMOVUPS Y2, ((off)*4)(DI); \
	VMOVUPS Y3, (64+(off)*4)(DI)

	Q40GROUP(0)
	Q40GROUP(8)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q40_loop

q40_done:
	VZEROUPPER
	RET
