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
	VMOVUPS (DX)(AX*4), Y0
	VMOVUPS 32(DX)(AX*4), Y1
	VMOVUPS 64(DX)(AX*4), Y2
	VMOVUPS 96(DX)(AX*4), Y3
	VMOVUPS 128(DX)(AX*4), Y4
	VMOVUPS 160(DX)(AX*4), Y5
	VMOVUPS 192(DX)(AX*4), Y6
	VMOVUPS 224(DX)(AX*4), Y7
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
	VMOVUPS Y0, (DX)(AX*4)
	VMOVUPS Y1, 32(DX)(AX*4)
	VMOVUPS Y2, 64(DX)(AX*4)
	VMOVUPS Y3, 96(DX)(AX*4)
	VMOVUPS Y4, 128(DX)(AX*4)
	VMOVUPS Y5, 160(DX)(AX*4)
	VMOVUPS Y6, 192(DX)(AX*4)
	VMOVUPS Y7, 224(DX)(AX*4)
	MOVQ R10, AX
	ADDQ $68, R14
	JMP  accq_chunk64

accq_chunk32:
	CMPQ AX, R9
	JGE  accq_done
	VMOVUPS (DX)(AX*4), Y0
	VMOVUPS 32(DX)(AX*4), Y1
	VMOVUPS 64(DX)(AX*4), Y2
	VMOVUPS 96(DX)(AX*4), Y3
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
	VMOVUPS Y0, (DX)(AX*4)
	VMOVUPS Y1, 32(DX)(AX*4)
	VMOVUPS Y2, 64(DX)(AX*4)
	VMOVUPS Y3, 96(DX)(AX*4)

accq_done:
	VZEROUPPER
	RET
