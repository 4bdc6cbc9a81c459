//go:build amd64 && !purego

#include "textflag.h"

#define HALFX 6
#include "int8half_amd64.h"

// q80Rows8AVX2 is q80Rows8AVXVNNI on AVX2 alone (Zen 2/3): VPMADDUBSW of
// the unsigned values w+128 by the activations broadcast would saturate,
// so it takes them split (splitQ8AVX2: q = 16h + l, h and l in [-8, 8]),
// VPMADDUBSW'd by each half apart and summed in 16 bits (a word at most
// 16 products of 255 by 8), widened as 16 h-sums plus l-sums: the same
// exact 32-bit sums, so the same bits. A block's split activations are 64
// bytes: per half-block (16 values) the h of dwords 0-1, their l, the h
// of dwords 2-3, their l (VPACKSSWB's lanes), so dword v's h is at
// 32(v/4) + 16(v%4/2) + 4(v%2) and its l 8 bytes on.

// FILL32(sym, v): 32 bytes, four times the quadword v.
#define FILL32(sym, v) \
	DATA sym+0(SB)/8, $v \
	DATA sym+8(SB)/8, $v \
	DATA sym+16(SB)/8, $v \
	DATA sym+24(SB)/8, $v \
	GLOBL sym(SB), RODATA|NOPTR, $32

FILL32(q8w16<>, 0x0010001000100010)
FILL32(q8w1<>, 0x0001000100010001)
FILL32(q8eight<>, 0x0008000800080008)

// Q8W(v): dword v of the half into Y8.
#define Q8W(v) \
	VMOVDQU (32+64*(v))(DI)(R9*1), Y8

// Q8SF(o, x, H, L) and Q8S(o, x, H, L): Y8 by the h (at o(x)) and l
// (8 on) of a token's dword, broadcast, into 16-bit sums H and L, or
// added.
#define Q8SF(o, x, H, L) \
	VPBROADCASTD (o)x, Y14 \
	VPBROADCASTD (8+(o))x, Y15 \
	VPMADDUBSW   Y14, Y8, H \
	VPMADDUBSW   Y15, Y8, L

#define Q8S(o, x, H, L) \
	VPBROADCASTD (o)x, Y14 \
	VPBROADCASTD (8+(o))x, Y15 \
	VPMADDUBSW   Y14, Y8, Y14 \
	VPMADDUBSW   Y15, Y8, Y15 \
	VPADDW       Y14, H, H \
	VPADDW       Y15, L, L

// Q8S4F(v, o) and Q8S4(v, o): dword v (its h at o) against four tokens
// (BX, BX+R8, R11, R11+R8), h-sums Y0-Y3, l-sums Y9-Y12.
#define Q8S4F(v, o) \
	Q8W(v) \
	Q8SF(o, (BX), Y0, Y9) \
	Q8SF(o, (BX)(R8*1), Y1, Y10) \
	Q8SF(o, (R11), Y2, Y11) \
	Q8SF(o, (R11)(R8*1), Y3, Y12)

#define Q8S4(v, o) \
	Q8W(v) \
	Q8S(o, (BX), Y0, Y9) \
	Q8S(o, (BX)(R8*1), Y1, Y10) \
	Q8S(o, (R11), Y2, Y11) \
	Q8S(o, (R11)(R8*1), Y3, Y12)

// Q8WIDEN(H, L): H = 16 H + L in 32 bits.
#define Q8WIDEN(H, L) \
	VPMADDWD q8w16<>(SB), H, H \
	VPMADDWD q8w1<>(SB), L, L \
	VPADDD   L, H, H

// func q80Rows8AVX2(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// The frame of int8half_amd64.h, qs the split activations; a packed
// block is 544 bytes.
TEXT ·q80Rows8AVX2(SB), NOSPLIT, $0-80
	HALFARGS
	CMPQ R10, $4
	JLT  one

four:
	HALF4BEGIN

fourblock:
	Q8S4F(0, 0)
	Q8S4(1, 4)
	Q8S4(2, 16)
	Q8S4(3, 20)
	Q8S4(4, 32)
	Q8S4(5, 36)
	Q8S4(6, 48)
	Q8S4(7, 52)
	Q8WIDEN(Y0, Y9)
	Q8WIDEN(Y1, Y10)
	Q8WIDEN(Y2, Y11)
	Q8WIDEN(Y3, Y12)
	VCVTPH2PS (DI), Y13
	HALF4ENDS(Q8END)
	HALF4STEP(544)
	JNZ       fourblock

	HALF4NEXT
	HALFONE

oneblock:
	Q8W(0)
	Q8SF(0, (BX), Y0, Y1)
	Q8W(1)
	Q8SF(4, (BX), Y2, Y3)
	Q8W(2)
	Q8S(16, (BX), Y0, Y1)
	Q8W(3)
	Q8S(20, (BX), Y2, Y3)
	Q8W(4)
	Q8S(32, (BX), Y0, Y1)
	Q8W(5)
	Q8S(36, (BX), Y2, Y3)
	Q8W(6)
	Q8S(48, (BX), Y0, Y1)
	Q8W(7)
	Q8S(52, (BX), Y2, Y3)
	VPADDW    Y2, Y0, Y0
	VPADDW    Y3, Y1, Y1
	Q8WIDEN(Y0, Y1)
	VCVTPH2PS (DI), Y13
	Q8END(Y0, (DX), (R12), Y4)
	HALFDONE(544)

// func splitQ8AVX2(qs, out *int8, n int)
//
// q8_0 values (n, a multiple of 32) into q80Rows8AVX2's split form: per
// sixteen, h = (q+8)>>4 and l = q-16h as words, packed (VPACKSSWB) to
// the h of values 0-7, their l, the h of 8-15, their l.
TEXT ·splitQ8AVX2(SB), NOSPLIT, $0-24
	MOVQ qs+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   splitdone
	VMOVDQU q8eight<>(SB), Y3

split:
	VPMOVSXBW (SI), Y0
	VPADDW    Y3, Y0, Y1
	VPSRAW    $4, Y1, Y1
	VPSLLW    $4, Y1, Y2
	VPSUBW    Y2, Y0, Y2
	VPACKSSWB Y2, Y1, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       split

splitdone:
	VZEROUPPER
	RET
