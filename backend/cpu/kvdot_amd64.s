//go:build amd64 && !purego

#include "textflag.h"

// func dotQ80AVX2(w *byte, qs *int8, d *float32, nb int) float32
// One Q8_0 row (a K row of the KV store) dotted with q8_0 values on AVX2,
// as rows32Go computes it: per block the exact integer sum (|w| times q
// with w's sign, VPMADDUBSW then VPMADDWD by ones; |w| <= 128 and |q| <= 127
// keep the pairs inside int16), then acc + p * (f16(w's scale) * q's).
TEXT ·dotQ80AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS X0, X0, X0
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	TESTQ CX, CX
	JZ    q80d_done

q80d_loop:
	VMOVDQU      2(SI), Y1
	VMOVDQU      (DI), Y2
	VPSIGNB      Y1, Y1, Y3
	VPSIGNB      Y1, Y2, Y4
	VPMADDUBSW   Y4, Y3, Y5
	VPMADDWD     Y14, Y5, Y5
	VEXTRACTI128 $1, Y5, X6
	VPADDD       X6, X5, X5
	VPSHUFD      $0x4E, X5, X6
	VPADDD       X6, X5, X5
	VPSHUFD      $0xB1, X5, X6
	VPADDD       X6, X5, X5
	VCVTDQ2PS    X5, X5
	MOVWLZX      (SI), AX
	VMOVD        AX, X7
	VCVTPH2PS    X7, X7
	VMULSS       (DX), X7, X7
	VMULSS       X7, X5, X5
	VADDSS       X5, X0, X0
	ADDQ         $34, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          q80d_loop

q80d_done:
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// LOAD8/STORE8 (LOAD4/STORE4) move the V sums' 64 (32) columns at AX
// between out (DX) and Y0-Y7 (Y0-Y3).
#define LOAD8 \
	LOAD4 \
	VMOVUPS 128(DX)(AX*4), Y4 \
	VMOVUPS 160(DX)(AX*4), Y5 \
	VMOVUPS 192(DX)(AX*4), Y6 \
	VMOVUPS 224(DX)(AX*4), Y7

#define LOAD4 \
	VMOVUPS (DX)(AX*4), Y0   \
	VMOVUPS 32(DX)(AX*4), Y1 \
	VMOVUPS 64(DX)(AX*4), Y2 \
	VMOVUPS 96(DX)(AX*4), Y3

#define STORE8 \
	STORE4 \
	VMOVUPS Y4, 128(DX)(AX*4) \
	VMOVUPS Y5, 160(DX)(AX*4) \
	VMOVUPS Y6, 192(DX)(AX*4) \
	VMOVUPS Y7, 224(DX)(AX*4)

#define STORE4 \
	VMOVUPS Y0, (DX)(AX*4)   \
	VMOVUPS Y1, 32(DX)(AX*4) \
	VMOVUPS Y2, 64(DX)(AX*4) \
	VMOVUPS Y3, 96(DX)(AX*4)

// QV8 widens the eight int8 values at off(R12) and adds p (Y8) times
// them times the block's scale (d, a Y register) into acc: as the V row's
// dequantized values (d*q, rounded) then ggml's vec_mad (a fused add).
#define QV8(off, d, t, acc) \
	VPMOVSXBD   off(R12), t \
	VCVTDQ2PS   t, t        \
	VMULPS      d, t, t     \
	VFMADD231PS t, Y8, acc

// func attnAccumQ8AVX2(p *float32, v *byte, rb, hd, n int, out *float32)
// out += sum_j p[j] * row j for n Q8_0 rows of hd values rb bytes apart,
// the attention's V of one KV block without a dequantized copy: each row's
// values are d*q (as quant's dequantization rounds them), fused-added as
// the float32 kernel adds them. 64 columns (two blocks) at a time, then 32.
TEXT ·attnAccumQ8AVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ rb+16(FP), BX
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	XORQ AX, AX
	XORQ R14, R14

accq_chunk64:
	LEAQ 64(AX), R10
	CMPQ R10, R9
	JGT  accq_chunk32
	LOAD8
	MOVQ DI, R11
	LEAQ (SI)(R14*1), R12
	MOVQ CX, R13

accq64_loop:
	VBROADCASTSS (R11), Y8
	VPBROADCASTW (R12), X13
	VCVTPH2PS    X13, Y13
	VPBROADCASTW 34(R12), X14
	VCVTPH2PS    X14, Y14
	QV8(2, Y13, Y9, Y0)
	QV8(10, Y13, Y10, Y1)
	QV8(18, Y13, Y11, Y2)
	QV8(26, Y13, Y12, Y3)
	QV8(36, Y14, Y9, Y4)
	QV8(44, Y14, Y10, Y5)
	QV8(52, Y14, Y11, Y6)
	QV8(60, Y14, Y12, Y7)
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  accq64_loop
	STORE8
	MOVQ R10, AX
	ADDQ $68, R14
	JMP  accq_chunk64

accq_chunk32:
	CMPQ AX, R9
	JGE  accq_done
	LOAD4
	MOVQ DI, R11
	LEAQ (SI)(R14*1), R12
	MOVQ CX, R13

accq32_loop:
	VBROADCASTSS (R11), Y8
	VPBROADCASTW (R12), X13
	VCVTPH2PS    X13, Y13
	QV8(2, Y13, Y9, Y0)
	QV8(10, Y13, Y10, Y1)
	QV8(18, Y13, Y11, Y2)
	QV8(26, Y13, Y12, Y3)
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  accq32_loop
	STORE4

accq_done:
	VZEROUPPER
	RET

// Q4V8 adds p (Y8) times eight Q4_0 values (the low eight nibbles of
// src, less 8, times the block's scale d) into acc. Y11: eight 8s.
#define Q4V8(src, d, acc) \
	VPMOVZXBD   src, Y14    \
	VPSUBD      Y11, Y14, Y14 \
	VCVTDQ2PS   Y14, Y14    \
	VMULPS      d, Y14, Y14 \
	VFMADD231PS Y14, Y8, acc

// Q4BLK adds p times a Q4_0 block's 32 values (at off(R12)) into a0-a3:
// values 0-15 are its bytes' low nibbles, 16-31 their high ones. X12: the
// nibble mask.
#define Q4BLK(off, a0, a1, a2, a3) \
	VPBROADCASTW off(R12), X13     \
	VCVTPH2PS    X13, Y13          \
	VMOVDQU      off+2(R12), X9    \
	VPAND        X12, X9, X10      \
	VPSRLW       $4, X9, X9        \
	VPAND        X12, X9, X9       \
	Q4V8(X10, Y13, a0)             \
	VPSRLDQ      $8, X10, X10      \
	Q4V8(X10, Y13, a1)             \
	Q4V8(X9, Y13, a2)              \
	VPSRLDQ      $8, X9, X9        \
	Q4V8(X9, Y13, a3)

// func attnAccumQ4AVX2(p *float32, v *byte, rb, hd, n int, out *float32)
// attnAccumQ8AVX2 for Q4_0 rows: each value (q-8)*d as quant's
// dequantization rounds it, fused-added as the float32 kernel adds it.
TEXT ·attnAccumQ4AVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ rb+16(FP), BX
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	MOVL $0x0F0F0F0F, AX
	VMOVD AX, X12
	VPBROADCASTD X12, X12
	MOVL $8, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	XORQ AX, AX
	XORQ R14, R14

acc4_chunk64:
	LEAQ 64(AX), R10
	CMPQ R10, R9
	JGT  acc4_chunk32
	LOAD8
	MOVQ DI, R11
	LEAQ (SI)(R14*1), R12
	MOVQ CX, R13

acc464_loop:
	VBROADCASTSS (R11), Y8
	Q4BLK(0, Y0, Y1, Y2, Y3)
	Q4BLK(18, Y4, Y5, Y6, Y7)
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  acc464_loop
	STORE8
	MOVQ R10, AX
	ADDQ $36, R14
	JMP  acc4_chunk64

acc4_chunk32:
	CMPQ AX, R9
	JGE  acc4_done
	LOAD4
	MOVQ DI, R11
	LEAQ (SI)(R14*1), R12
	MOVQ CX, R13

acc432_loop:
	VBROADCASTSS (R11), Y8
	Q4BLK(0, Y0, Y1, Y2, Y3)
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  acc432_loop
	STORE4

acc4_done:
	VZEROUPPER
	RET
