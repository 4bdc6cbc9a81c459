//go:build !purego

#include "textflag.h"

// DELTAARGS loads both kernels' arguments, decay broadcast into dec (Y15
// or Z15): SI the state, R8 k, R9 q, R10 d, DX o, R12 next less m, BX a
// row's bytes, R11 the rows.
#define DELTAARGS(dec) \
	MOVQ         m+0(FP), SI \
	MOVQ         s+8(FP), CX \
	MOVQ         k+16(FP), R8 \
	MOVQ         q+24(FP), R9 \
	VBROADCASTSS decay+32(FP), dec \
	MOVQ         d+40(FP), R10 \
	MOVQ         o+48(FP), DX \
	MOVQ         next+56(FP), R12 \
	SUBQ         SI, R12 \
	MOVQ         CX, BX \
	SHLQ         $2, BX \
	MOVQ         CX, R11

// DELTAROWEND sums a row's output from X0's (Y0's) eight lanes, in the
// order both kernels share, stores it and moves to the next row (to row).
#define DELTAROWEND(row) \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VMOVSS       X0, (DX) \
	ADDQ         BX, SI \
	ADDQ         $4, R10 \
	ADDQ         $4, DX \
	DECQ         R11 \
	JNZ          row

// func deltaUpdateAVX2(m *float32, s int, k, q *float32, decay float32, d, o, next *float32)
// The gated delta rule's update of one head's state, ggml's layout (row j
// holds S[.][j]), and its output, in one pass over the rows:
// row_j = decay*row_j + d[j]*k, then o[j] = row_j . q. s is a multiple of 8.
// Meanwhile the s*s floats at next (the next head's state, whose first
// pass would otherwise wait on memory) are fetched into L2, a line for
// each two vectors of m.
TEXT ·deltaUpdateAVX2(SB), NOSPLIT, $0-64
	DELTAARGS(Y15)

delta_row:
	VBROADCASTSS (R10), Y14
	VXORPS       Y0, Y0, Y0
	VXORPS       Y2, Y2, Y2
	XORQ         AX, AX

delta_col:
	LEAQ        (SI)(AX*1), R13
	PREFETCHT1  (R13)(R12*1)
	VMULPS      (SI)(AX*1), Y15, Y1
	VFMADD231PS (R8)(AX*1), Y14, Y1
	VMOVUPS     Y1, (SI)(AX*1)
	VFMADD231PS (R9)(AX*1), Y1, Y0
	ADDQ        $32, AX
	CMPQ        AX, BX
	JGE         delta_sum
	VMULPS      (SI)(AX*1), Y15, Y3
	VFMADD231PS (R8)(AX*1), Y14, Y3
	VMOVUPS     Y3, (SI)(AX*1)
	VFMADD231PS (R9)(AX*1), Y3, Y2
	ADDQ        $32, AX
	CMPQ        AX, BX
	JLT         delta_col

delta_sum:
	VADDPS       Y2, Y0, Y0
	DELTAROWEND(delta_row)
	VZEROUPPER
	RET

// func deltaUpdateAVX512(m *float32, s int, k, q *float32, decay float32, d, o, next *float32)
// deltaUpdateAVX2 sixteen floats at a time, s a multiple of 16, with its
// bits: the AVX2 kernel sums a row's even and odd eight-float vectors in
// two accumulators, which here are one accumulator's low and high halves
// (a sixteen-float vector is an even and the next odd one), added, then
// reduced as there. The update is per element. Half the instructions.
TEXT ·deltaUpdateAVX512(SB), NOSPLIT, $0-64
	DELTAARGS(Z15)

delta512_row:
	VBROADCASTSS (R10), Z14
	VXORPS       Z0, Z0, Z0
	XORQ         AX, AX

delta512_col:
	LEAQ        (SI)(AX*1), R13
	PREFETCHT1  (R13)(R12*1)
	VMULPS      (SI)(AX*1), Z15, Z1
	VFMADD231PS (R8)(AX*1), Z14, Z1
	VMOVUPS     Z1, (SI)(AX*1)
	VFMADD231PS (R9)(AX*1), Z1, Z0
	ADDQ        $64, AX
	CMPQ        AX, BX
	JLT         delta512_col

	VEXTRACTF32X8 $1, Z0, Y2
	VADDPS        Y2, Y0, Y0
	DELTAROWEND(delta512_row)
	VZEROUPPER
	RET
