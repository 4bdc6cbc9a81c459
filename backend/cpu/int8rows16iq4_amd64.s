//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows8_amd64.h"
#include "avxvnni_amd64.h"
#include "int8rows8iq4_amd64.h"
#include "int8rows16iq4_amd64.h"

// iq4xsRows16AVXVNNI is iq4xsRows8AVXVNNI on two adjacent groups at once
// (sixteen rows: the second group nsb*1088 bytes on), for three tokens at
// a time: each activation broadcast feeds two VPDPBUSD, one a group. With
// eight rows a broadcast fed one, and the loads and micro-ops around the
// products, not the products, set its pace. The same integers and float
// step, so dotIQ4XSGo's bits. For passes of three tokens or more.

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

// func iq4xsRows16AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// The frame of int8rows16iq4_amd64.h.
TEXT ·iq4xsRows16AVXVNNI(SB), NOSPLIT, $0-80
	R16BEGIN
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
	R16STEP3

	R16ONE
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
	R16STEP1

	R16END
