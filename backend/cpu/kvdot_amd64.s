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
