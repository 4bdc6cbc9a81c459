//go:build !purego

#include "textflag.h"

// RoPE and the softmax's max on AVX2. Each rotated value is ropeTable.rope's
// two products and one add or subtract, unfused, so the bits are the Go
// loop's.

// ropedup<>: VPERMPS indices that repeat each of four cosines (or sines)
// for both members of its pair.
DATA ropedup<>+0(SB)/8, $0x0000000000000000
DATA ropedup<>+8(SB)/8, $0x0000000100000001
DATA ropedup<>+16(SB)/8, $0x0000000200000002
DATA ropedup<>+24(SB)/8, $0x0000000300000003
GLOBL ropedup<>(SB), RODATA|NOPTR, $32

// ROPEARGS loads (v *float32, hd, heads int, cos, sin *float32, pairs
// int): the rows at DI, R8 bytes apart, CX of them; cos at R9, sin at
// R10; the pairs' bytes of one table in R11.
#define ROPEARGS \
	MOVQ v+0(FP), DI \
	MOVQ hd+8(FP), R8 \
	SHLQ $2, R8 \
	MOVQ heads+16(FP), CX \
	MOVQ cos+24(FP), R9 \
	MOVQ sin+32(FP), R10 \
	MOVQ pairs+40(FP), R11 \
	SHLQ $2, R11

// func ropeNeoXAVX2(v *float32, hd, heads int, cos, sin *float32, pairs int)
// Rotates pairs (j, j+pairs) of each of heads rows of v (hd apart) for j <
// pairs, a multiple of 8.
TEXT ·ropeNeoXAVX2(SB), NOSPLIT, $0-48
	ROPEARGS

neox_head:
	XORQ AX, AX
	LEAQ (DI)(R11*1), SI

neox_loop:
	VMOVUPS (DI)(AX*1), Y0      // x0
	VMOVUPS (SI)(AX*1), Y1      // x1
	VMOVUPS (R9)(AX*1), Y2      // cos
	VMOVUPS (R10)(AX*1), Y3     // sin
	VMULPS  Y2, Y0, Y4          // x0*cos
	VMULPS  Y3, Y1, Y5          // x1*sin
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y3, Y0, Y0          // x0*sin
	VMULPS  Y2, Y1, Y1          // x1*cos
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y0, (SI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, R11
	JLT  neox_loop
	ADDQ R8, DI
	DECQ CX
	JNZ  neox_head
	VZEROUPPER
	RET

// func ropePairsAVX2(v *float32, hd, heads int, cos, sin *float32, pairs int)
// Rotates adjacent pairs (2j, 2j+1) of each of heads rows of v for j <
// pairs, a multiple of 4: even lanes x0*cos - x1*sin, odd lanes x1*cos +
// x0*sin (VADDSUBPS).
TEXT ·ropePairsAVX2(SB), NOSPLIT, $0-48
	ROPEARGS
	VMOVDQU ropedup<>(SB), Y7

pairs_head:
	XORQ AX, AX
	MOVQ DI, SI

pairs_loop:
	VMOVUPS    (R9)(AX*1), X2
	VPERMPS    Y2, Y7, Y2       // cos, each twice
	VMOVUPS    (R10)(AX*1), X3
	VPERMPS    Y3, Y7, Y3       // sin, each twice
	VMOVUPS    (SI), Y0         // x0 x1 x0 x1 ...
	VPERMILPS  $0xb1, Y0, Y1    // x1 x0 x1 x0 ...
	VMULPS     Y2, Y0, Y0
	VMULPS     Y3, Y1, Y1
	VADDSUBPS  Y1, Y0, Y0
	VMOVUPS    Y0, (SI)
	ADDQ $32, SI
	ADDQ $16, AX
	CMPQ AX, R11
	JLT  pairs_loop
	ADDQ R8, DI
	DECQ CX
	JNZ  pairs_head
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
// The largest of x[:n] (n a positive multiple of 8; NaNs aside, the value
// softmax's loop finds).
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	SHLQ $2, CX
	LEAQ (SI)(CX*1), DX      // the end
	LEAQ -128(DX), R8        // the last start of a 32-wide step
	ADDQ $32, SI

max_four:
	CMPQ SI, R8
	JGT  max_one
	VMAXPS (SI), Y0, Y0
	VMAXPS 32(SI), Y1, Y1
	VMAXPS 64(SI), Y2, Y2
	VMAXPS 96(SI), Y3, Y3
	ADDQ $128, SI
	JMP  max_four

max_one:
	CMPQ SI, DX
	JGE  max_fold
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	JMP  max_one

max_fold:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET
