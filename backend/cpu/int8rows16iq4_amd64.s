//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows8_amd64.h"
#include "avxvnni_amd64.h"
#include "int8rows8iq4_amd64.h"

// iq4xsRows16AVXVNNI is iq4xsRows8AVXVNNI on two adjacent groups at once
// (sixteen rows: the second group nsb*1088 bytes on), for three tokens at
// a time: each activation broadcast feeds two VPDPBUSD, one a group. With
// eight rows a broadcast fed one, and the loads and micro-ops around the
// products, not the products, set its pace. The same integers and float
// step, so dotIQ4XSGo's bits. For passes of three tokens or more.
//
// scr (bytes): 0 the first group's scales and d as IQSCALES leaves them
// (dwords at 0, d at 512), 832 the second's (dwords at 832, d at 1344),
// 1664 the first group's grid entries plus 128 (IQDEC), 3712 the
// second's, 5760 three tokens' -128 times each sub-block's activation sum,
// 5856 each token's sixteen float sums.

// T3V(ib, v, hi): packed vector v of sub-block ib, its low (hi 0) or high
// nibbles' entries, both groups (Y12, Y13), by three tokens (BX, R8
// apart): the first group's products into Y0, Y2, Y4, the second's into
// Y1, Y3, Y5.
#define T3V(ib, v, hi) \
	VMOVDQU      (1664+64*(4*(ib)+(v))+32*(hi))(R9), Y12 \
	VMOVDQU      (3712+64*(4*(ib)+(v))+32*(hi))(R9), Y13 \
	VPBROADCASTD (32*(ib)+16*(hi)+4*(v))(BX), Y14 \
	VPDPBUSDY(0, 12, 14) \
	VPDPBUSDY(1, 13, 14) \
	VPBROADCASTD (32*(ib)+16*(hi)+4*(v))(BX)(R8*1), Y14 \
	VPDPBUSDY(2, 12, 14) \
	VPDPBUSDY(3, 13, 14) \
	VPBROADCASTD (32*(ib)+16*(hi)+4*(v))(BX)(R8*2), Y14 \
	VPDPBUSDY(4, 12, 14) \
	VPDPBUSDY(5, 13, 14)

// T8V(V, ib): V on sub-block ib's eight value vectors.
#define T8V(V, ib) \
	V(ib, 0, 0) \
	V(ib, 0, 1) \
	V(ib, 1, 0) \
	V(ib, 1, 1) \
	V(ib, 2, 0) \
	V(ib, 2, 1) \
	V(ib, 3, 0) \
	V(ib, 3, 1)

// T3SUB(ib): sub-block ib for three tokens, its sums starting at the
// tokens' -128s.
#define T3SUB(ib) \
	VPBROADCASTD (5760+4*(ib))(R9), Y0 \
	VMOVDQA      Y0, Y1 \
	VPBROADCASTD (5792+4*(ib))(R9), Y2 \
	VMOVDQA      Y2, Y3 \
	VPBROADCASTD (5824+4*(ib))(R9), Y4 \
	VMOVDQA      Y4, Y5 \
	T8V(T3V, ib)

// T3SCF(ib) and T3SC(ib): the sums times sub-block ib's scales (each
// group's), into (or added to) S in Y6-Y11.
#define T3SCF(ib) \
	VPMULLD (32*(ib))(R9), Y0, Y6 \
	VPMULLD (832+32*(ib))(R9), Y1, Y7 \
	VPMULLD (32*(ib))(R9), Y2, Y8 \
	VPMULLD (832+32*(ib))(R9), Y3, Y9 \
	VPMULLD (32*(ib))(R9), Y4, Y10 \
	VPMULLD (832+32*(ib))(R9), Y5, Y11

#define T3SC(ib) \
	VPMULLD (32*(ib))(R9), Y0, Y0 \
	VPMULLD (832+32*(ib))(R9), Y1, Y1 \
	VPMULLD (32*(ib))(R9), Y2, Y2 \
	VPMULLD (832+32*(ib))(R9), Y3, Y3 \
	VPMULLD (32*(ib))(R9), Y4, Y4 \
	VPMULLD (832+32*(ib))(R9), Y5, Y5 \
	VPADDD  Y0, Y6, Y6 \
	VPADDD  Y1, Y7, Y7 \
	VPADDD  Y2, Y8, Y8 \
	VPADDD  Y3, Y9, Y9 \
	VPADDD  Y4, Y10, Y10 \
	VPADDD  Y5, Y11, Y11

// T16END(da, dd, S, acc): acc + (d_a d)S as F8END, d_a at da, the rows' d
// at dd(R9).
#define T16END(da, dd, S, acc) \
	VBROADCASTSS da, Y14 \
	VMULPS       dd(R9), Y14, Y15 \
	VCVTDQ2PS    S, S \
	VMULPS       S, Y15, S \
	VADDPS       acc, S, S \
	VMOVUPS      S, acc

// T16TOK(da, S0, S1, o): a token's super-block, both groups (S0, S1),
// into its sums at o(AX).
#define T16TOK(da, S0, S1, o) \
	T16END(da, 512, S0, (o)(AX)) \
	T16END(da, 1344, S1, (o+32)(AX))

// T1V(ib, v, hi) and T1SUB(ib): one token (BX), both groups, into Y0, Y1.
#define T1V(ib, v, hi) \
	VMOVDQU      (1664+64*(4*(ib)+(v))+32*(hi))(R9), Y12 \
	VMOVDQU      (3712+64*(4*(ib)+(v))+32*(hi))(R9), Y13 \
	VPBROADCASTD (32*(ib)+16*(hi)+4*(v))(BX), Y14 \
	VPDPBUSDY(0, 12, 14) \
	VPDPBUSDY(1, 13, 14)

#define T1SUB(ib) \
	VPBROADCASTD (5760+4*(ib))(R9), Y0 \
	VMOVDQA      Y0, Y1 \
	T8V(T1V, ib) \
	VPMULLD      (32*(ib))(R9), Y0, Y0 \
	VPMULLD      (832+32*(ib))(R9), Y1, Y1 \
	VPADDD       Y0, Y6, Y6 \
	VPADDD       Y1, Y7, Y7

// PF18(off, b): prefetch a group's super-block (17 lines) at off(b).
#define PF18(off, b) \
	PF9B(off, b) \
	PF9B(off+576, b)

// func iq4xsRows16AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// The registers of int8rows8_amd64.h's frame; R11 the second group's
// offset (nsb*1088).
TEXT ·iq4xsRows16AVXVNNI(SB), NOSPLIT, $0-80
	MOVQ   w+0(FP), DI
	MOVQ   qstride+32(FP), R8
	MOVQ   scr+56(FP), R9
	MOVQ   R8, R13
	SHRQ   $3, R13
	MOVQ   nsb+40(FP), R14
	IMUL3Q $1088, R14, R11
	SHLQ   $2, R14
	MOVQ   ntok+48(FP), R10
	LEAQ   5856(R9), AX
	VXORPS Y0, Y0, Y0

zero:
	VMOVUPS Y0, (AX)
	VMOVUPS Y0, 32(AX)
	ADDQ    $64, AX
	DECQ    R10
	JNZ     zero
	XORQ    CX, CX

block:
	// Both groups' scales and grid entries, one at a time through the
	// eight-row macros (R9 and DI moved to each's place).
	PF18(4352, DI)
	LEAQ    (DI)(R11*1), SI
	PF18(4352, SI)
	IQSCALES
	VMOVDQU ·r8nib(SB), Y15
	VMOVDQU iq4u<>(SB), Y13
	ADDQ    $832, R9
	IQDEC
	ADDQ    R11, DI
	IQSCALES
	ADDQ    $2048, R9
	IQDEC
	SUBQ    R11, DI
	SUBQ    $2880, R9
	R8TOKS(5856)
	CMPQ    R10, $3
	JLT     one

three:
	VMOVDQU  iq4m128<>(SB), Y15
	VPMADDWD (DX), Y15, Y0
	VPMADDWD (DX)(R13*1), Y15, Y1
	VPMADDWD (DX)(R13*2), Y15, Y2
	VMOVDQU  Y0, 5760(R9)
	VMOVDQU  Y1, 5792(R9)
	VMOVDQU  Y2, 5824(R9)
	T3SUB(0)
	T3SCF(0)
	T3SUB(1)
	T3SC(1)
	T3SUB(2)
	T3SC(2)
	T3SUB(3)
	T3SC(3)
	T3SUB(4)
	T3SC(4)
	T3SUB(5)
	T3SC(5)
	T3SUB(6)
	T3SC(6)
	T3SUB(7)
	T3SC(7)
	T16TOK((R12), Y6, Y7, 0)
	T16TOK((R12)(R14*1), Y8, Y9, 64)
	T16TOK((R12)(R14*2), Y10, Y11, 128)
	LEAQ (BX)(R8*2), BX
	ADDQ R8, BX
	LEAQ (DX)(R13*2), DX
	ADDQ R13, DX
	LEAQ (R12)(R14*2), R12
	ADDQ R14, R12
	ADDQ $192, AX
	SUBQ $3, R10
	CMPQ R10, $3
	JGE  three

one:
	TESTQ R10, R10
	JZ    next

onetok:
	VMOVDQU  iq4m128<>(SB), Y15
	VPMADDWD (DX), Y15, Y0
	VMOVDQU  Y0, 5760(R9)
	VPXOR    Y6, Y6, Y6
	VPXOR    Y7, Y7, Y7
	T1SUB(0)
	T1SUB(1)
	T1SUB(2)
	T1SUB(3)
	T1SUB(4)
	T1SUB(5)
	T1SUB(6)
	T1SUB(7)
	T16TOK((R12), Y6, Y7, 0)
	ADDQ R8, BX
	ADDQ R13, DX
	ADDQ R14, R12
	ADDQ $64, AX
	DECQ R10
	JNZ  onetok

next:
	R8NEXT(1088, block)
	MOVQ out+64(FP), DI
	MOVQ ostride+72(FP), SI
	SHLQ $2, SI
	LEAQ 5856(R9), AX
	MOVQ ntok+48(FP), R10

write:
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, AX
	ADDQ    SI, DI
	DECQ    R10
	JNZ     write
	VZEROUPPER
	RET
