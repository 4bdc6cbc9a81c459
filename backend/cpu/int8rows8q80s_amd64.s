//go:build amd64 && !purego

#include "textflag.h"
#include "int8half_amd64.h"

// q80Rows8AVX2 is q80Rows8AVXVNNI on plain AVX2 by the sign trick, on
// groups packed without the bias (packQ80S): VPMADDUBSW of |w| (at most
// 128) by the activations given w's signs (VPSIGNB; q8_0 activations are
// within ±127) pairs at most 2 x 128 x 127 = 32,512, so no word
// saturates; one VPMADDWD by ones widens each token's pairs to 32 bits.
// The sums are the exact sums of w times a, so no offset comes off (nsum
// is not read) and the float step is the other kernels': rows32Go's bits.

DATA s8ones<>+0(SB)/4, $0x00010001
GLOBL s8ones<>(SB), RODATA|NOPTR, $4

// S8W(v): dword v of the half, signed values (Y8), and their magnitudes
// (Y14).
#define S8W(v) \
	VMOVDQU (32+64*(v))(DI)(R9*1), Y8 \
	VPABSB  Y8, Y14

// S8T(o, x, T, acc): the token's dword at o(x) against the half's dword,
// added to acc through the temporary T.
#define S8T(o, x, T, acc) \
	VPBROADCASTD (o)x, T \
	VPSIGNB      Y8, T, T \
	VPMADDUBSW   T, Y14, T \
	VPMADDWD     Y15, T, T \
	VPADDD       T, acc, acc

// S8T4(v): dword v against four tokens (BX, BX+R8, R11, R11+R8) into Y0-Y3.
#define S8T4(v) \
	S8W(v) \
	S8T((4*(v)), (BX), Y9, Y0) \
	S8T((4*(v)), (BX)(R8*1), Y10, Y1) \
	S8T((4*(v)), (R11), Y11, Y2) \
	S8T((4*(v)), (R11)(R8*1), Y9, Y3)

// S8T1(v, T, acc): dword v against one token (BX) into acc.
#define S8T1(v, T, acc) \
	S8W(v) \
	S8T((4*(v)), (BX), T, acc)

// S8END(P, nsum, d, acc): the float step of HALFEND without the offset.
#define S8END(P, nsum, d, acc) \
	VCVTDQ2PS    P, P \
	VBROADCASTSS d, Y10 \
	VMULPS       Y10, Y13, Y10 \
	VMULPS       Y10, P, P \
	VADDPS       P, acc, acc

// S8BLOCK: a block against four tokens (HALF4PASS).
#define S8BLOCK \
	VCVTPH2PS (DI), Y13 \
	VPXOR     Y0, Y0, Y0 \
	VPXOR     Y1, Y1, Y1 \
	VPXOR     Y2, Y2, Y2 \
	VPXOR     Y3, Y3, Y3 \
	S8T4(0) \
	S8T4(1) \
	S8T4(2) \
	S8T4(3) \
	S8T4(4) \
	S8T4(5) \
	S8T4(6) \
	S8T4(7) \
	HALF4ENDS(S8END)

// func q80Rows8AVX2(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// The frame of int8half_amd64.h; a packed block is 544 bytes.
TEXT ·q80Rows8AVX2(SB), NOSPLIT, $0-80
	HALFARGS
	VPBROADCASTD s8ones<>(SB), Y15
	CMPQ R10, $4
	JLT  one

four:
	HALF4BEGIN
	HALF4PASS(HALFPF9, S8BLOCK, 544, fourpf, fourblock, fourend)
	HALF4NEXT
	HALFONE

oneblock:
	VCVTPH2PS (DI), Y13
	VPXOR     Y0, Y0, Y0
	VPXOR     Y1, Y1, Y1
	S8T1(0, Y9, Y0)
	S8T1(1, Y11, Y1)
	S8T1(2, Y9, Y0)
	S8T1(3, Y11, Y1)
	S8T1(4, Y9, Y0)
	S8T1(5, Y11, Y1)
	S8T1(6, Y9, Y0)
	S8T1(7, Y11, Y1)
	VPADDD    Y1, Y0, Y0
	S8END(Y0, (DX), (R12), Y4)
	HALFDONE(544)
