#include "textflag.h"

// func maxF32AVX2(x *float32, n int) float32
// The largest of x[:n], n a positive multiple of 32, skipping NaNs: VMAXPS
// returns its second source when either is NaN, and that is the running
// maximum, which starts from x[0] (the caller checks that it is a number).
TEXT ·maxF32AVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS (SI), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	LEAQ (SI)(CX*4), CX

max_loop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS Y0, Y4, Y0
	VMAXPS Y1, Y5, Y1
	VMAXPS Y2, Y6, Y2
	VMAXPS Y3, Y7, Y3
	ADDQ $128, SI
	CMPQ SI, CX
	JLT  max_loop

	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func indexF32AVX2(x *float32, n int, v float32) int
// The first i < n with x[i] == v, or -1; n is a multiple of 8.
TEXT ·indexF32AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS v+16(FP), Y1
	XORQ AX, AX

idx_loop:
	CMPQ AX, CX
	JGE  idx_none
	VCMPPS $0, (SI)(AX*4), Y1, Y2
	VMOVMSKPS Y2, DX
	TESTL DX, DX
	JNZ  idx_found
	ADDQ $8, AX
	JMP  idx_loop

idx_found:
	BSFL DX, DX
	ADDQ DX, AX
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

idx_none:
	VZEROUPPER
	MOVQ $-1, ret+24(FP)
	RET
