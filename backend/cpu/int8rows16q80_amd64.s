//go:build amd64 && !purego

#include "textflag.h"
#include "int8half_amd64.h"
#include "avxvnni_amd64.h"

// q80Rows16AVX2 is q80Rows8AVX2's sign trick on a whole group of sixteen
// rows packed without the bias (packQ80S), a token at a time, for passes
// of one to three tokens (batch-1 decode): the halves would each read half
// of every line of the group, the second from cache after the first has
// streamed it all, so a group's lines are consumed as they arrive here.
// The sums and the float step are the half kernel's, so are the bits.

DATA g8ones<>+0(SB)/4, $0x00010001
GLOBL g8ones<>(SB), RODATA|NOPTR, $4

// G16(v): dword vector v of both halves against the token's dword v (BX):
// rows 0-7 into Y0, 8-15 into Y2.
#define G16(v) \
	VPBROADCASTD (4*(v))(BX), Y6 \
	VMOVDQU      (32+64*(v))(DI), Y8 \
	VMOVDQU      (64+64*(v))(DI), Y9 \
	VPABSB       Y8, Y10 \
	VPABSB       Y9, Y11 \
	VPSIGNB      Y8, Y6, Y7 \
	VPSIGNB      Y9, Y6, Y3 \
	VPMADDUBSW   Y7, Y10, Y7 \
	VPMADDUBSW   Y3, Y11, Y3 \
	VPMADDWD     Y15, Y7, Y7 \
	VPMADDWD     Y15, Y3, Y3 \
	VPADDD       Y7, Y0, Y0 \
	VPADDD       Y3, Y2, Y2

// func q80Rows16AVX2(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// The frame of G16ARGS (int8half_amd64.h); a packed block is 544 bytes,
// nsum is not read.
TEXT ·q80Rows16AVX2(SB), NOSPLIT, $0-72
	G16ARGS
	VPBROADCASTD g8ones<>(SB), Y15

tok:
	G16BEGIN

block:
	VPXOR        Y0, Y0, Y0
	VPXOR        Y2, Y2, Y2
	G16(0)
	G16(1)
	G16(2)
	G16(3)
	G16(4)
	G16(5)
	G16(6)
	G16(7)
	G16FLOAT
	G16STEP(544)
	JNZ          block
	G16END
	JNZ          tok
	VZEROUPPER
	RET

// V16(v, a, b): dword vector v of both halves by VPDPBUSD against the
// token's dword v (BX): rows 0-7 into Y(a), 8-15 into Y(b).
#define V16(v, a, b) \
	VMOVDQU      (32+64*(v))(DI), Y8 \
	VMOVDQU      (64+64*(v))(DI), Y10 \
	VPBROADCASTD (4*(v))(BX), Y9 \
	VPDPBUSDY(a, 8, 9) \
	VPDPBUSDY(b, 10, 9)

// func q80Rows16AVXVNNI(w *byte, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// q80Rows8AVXVNNI's one-token loop on the whole group, as q80Rows16AVX2
// is the sign trick's: the G16ARGS frame, nsum taking off the values'
// offset of 128.
TEXT ·q80Rows16AVXVNNI(SB), NOSPLIT, $0-72
	G16ARGS

vtok:
	G16BEGIN

vblock:
	VPXOR        Y0, Y0, Y0
	VPXOR        Y1, Y1, Y1
	VPXOR        Y2, Y2, Y2
	VPXOR        Y3, Y3, Y3
	V16(0, 0, 2)
	V16(1, 1, 3)
	V16(2, 0, 2)
	V16(3, 1, 3)
	V16(4, 0, 2)
	V16(5, 1, 3)
	V16(6, 0, 2)
	V16(7, 1, 3)
	VPADDD       Y1, Y0, Y0
	VPADDD       Y3, Y2, Y2
	G16OFF(7)
	G16STEP(544)
	JNZ          vblock
	G16END
	JNZ          vtok
	VZEROUPPER
	RET
