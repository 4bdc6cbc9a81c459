//go:build amd64 && !purego

#include "textflag.h"
#include "int8half_amd64.h"
#include "avxvnni_amd64.h"

// q40Rows16AVX2 is q40Rows8AVX2's one-token loop on a whole packed group
// of sixteen rows, for passes of one to three tokens, as q80Rows16AVX2 is
// for Q8_0: each line of the group is read once. The sums and the float
// step are the half kernel's, so are the bits.

// Q16(v): dword vector v's nibbles of both halves by the token's
// activations (BX): rows 0-7's 16-bit sums into Y0, 8-15's into Y2 (Y15:
// 0x0f).
#define Q16(v) \
	VMOVDQU      (32+64*(v))(DI), Y10 \
	VMOVDQU      (64+64*(v))(DI), Y11 \
	VPBROADCASTD (4*(v))(BX), Y6 \
	VPAND        Y15, Y10, Y8 \
	VPAND        Y15, Y11, Y9 \
	VPMADDUBSW   Y6, Y8, Y8 \
	VPMADDUBSW   Y6, Y9, Y9 \
	VPADDW       Y8, Y0, Y0 \
	VPADDW       Y9, Y2, Y2 \
	VPBROADCASTD (16+4*(v))(BX), Y6 \
	VPSRLW       $4, Y10, Y10 \
	VPSRLW       $4, Y11, Y11 \
	VPAND        Y15, Y10, Y10 \
	VPAND        Y15, Y11, Y11 \
	VPMADDUBSW   Y6, Y10, Y10 \
	VPMADDUBSW   Y6, Y11, Y11 \
	VPADDW       Y10, Y0, Y0 \
	VPADDW       Y11, Y2, Y2

// func q40Rows16AVX2(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// The frame of G16ARGS (int8half_amd64.h); a packed block is 288 bytes.
TEXT ·q40Rows16AVX2(SB), NOSPLIT, $0-72
	G16ARGS
	VPBROADCASTD ·r8c0f(SB), Y15
	VPBROADCASTD ·r8ones(SB), Y12

tok:
	G16BEGIN

block:
	VPXOR        Y0, Y0, Y0
	VPXOR        Y2, Y2, Y2
	Q16(0)
	Q16(1)
	Q16(2)
	Q16(3)
	VPMADDWD     Y12, Y0, Y0
	VPMADDWD     Y12, Y2, Y2
	G16OFF(3)
	G16STEP(288)
	JNZ          block
	G16END
	JNZ          tok
	VZEROUPPER
	RET

// QV16(v): dword vector v's nibbles of both halves by VPDPBUSD against
// the token's activations (BX): rows 0-7 into Y0, 8-15 into Y2.
#define QV16(v) \
	VMOVDQU      (32+64*(v))(DI), Y10 \
	VMOVDQU      (64+64*(v))(DI), Y11 \
	VPBROADCASTD (4*(v))(BX), Y6 \
	VPAND        Y15, Y10, Y8 \
	VPAND        Y15, Y11, Y9 \
	VPDPBUSDY(0, 8, 6) \
	VPDPBUSDY(2, 9, 6) \
	VPBROADCASTD (16+4*(v))(BX), Y6 \
	VPSRLW       $4, Y10, Y10 \
	VPSRLW       $4, Y11, Y11 \
	VPAND        Y15, Y10, Y10 \
	VPAND        Y15, Y11, Y11 \
	VPDPBUSDY(0, 10, 6) \
	VPDPBUSDY(2, 11, 6)

// func q40Rows16AVXVNNI(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// q40Rows16AVX2 with AVX-VNNI (q40Rows8AVXVNNI's one-token loop on the
// whole group).
TEXT ·q40Rows16AVXVNNI(SB), NOSPLIT, $0-72
	G16ARGS
	VPBROADCASTD ·r8c0f(SB), Y15

vtok:
	G16BEGIN

vblock:
	VPXOR        Y0, Y0, Y0
	VPXOR        Y2, Y2, Y2
	QV16(0)
	QV16(1)
	QV16(2)
	QV16(3)
	G16OFF(3)
	G16STEP(288)
	JNZ          vblock
	G16END
	JNZ          vtok
	VZEROUPPER
	RET
