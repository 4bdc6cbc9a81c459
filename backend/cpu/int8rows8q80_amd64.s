//go:build amd64 && !purego

#include "textflag.h"
#include "int8half_amd64.h"
#include "avxvnni_amd64.h"

// q80Rows8AVXVNNI: half of a group of sixteen Q8_0 rows packed for the
// VNNI row kernels (packQ80: per block the sixteen fp16 scales, then dword
// v of row j at 32+64v+4j, each byte XORed with 0x80: w+128) against q8_0
// activations on AVX-VNNI (Alder Lake and later; without AVX-512), eight
// rows in dword lanes: per token and block eight VPDPBUSD of the unsigned
// values by the token's activations broadcast, exact in 32 bits, less 128
// times the activations' sum (their nsum), times d_w d_a: rows32Go's bits,
// as the VNNI kernels'.

// Q8T4(v): dword v of the half (Y8) against four tokens' activations
// (BX, BX+R8, R11, R11+R8) at 4v, into Y0-Y3.
#define Q8T4(v) \
	VMOVDQU      (32+64*(v))(DI)(R9*1), Y8 \
	VPBROADCASTD (4*(v))(BX), Y9 \
	VPBROADCASTD (4*(v))(BX)(R8*1), Y10 \
	VPBROADCASTD (4*(v))(R11), Y11 \
	VPBROADCASTD (4*(v))(R11)(R8*1), Y12 \
	VPDPBUSDY(0, 8, 9) \
	VPDPBUSDY(1, 8, 10) \
	VPDPBUSDY(2, 8, 11) \
	VPDPBUSDY(3, 8, 12)

// Q8T1(v, acc): the same for one token (BX) into Y(acc).
#define Q8T1(v, acc) \
	VMOVDQU      (32+64*(v))(DI)(R9*1), Y8 \
	VPBROADCASTD (4*(v))(BX), Y9 \
	VPDPBUSDY(acc, 8, 9)

// Q8BLOCK: a block against four tokens (HALF4PASS).
#define Q8BLOCK \
	VCVTPH2PS (DI), Y13 \
	VPXOR     Y0, Y0, Y0 \
	VPXOR     Y1, Y1, Y1 \
	VPXOR     Y2, Y2, Y2 \
	VPXOR     Y3, Y3, Y3 \
	Q8T4(0) \
	Q8T4(1) \
	Q8T4(2) \
	Q8T4(3) \
	Q8T4(4) \
	Q8T4(5) \
	Q8T4(6) \
	Q8T4(7) \
	HALF4ENDS(Q8END)

// func q80Rows8AVXVNNI(w *byte, half int, qs *int8, nsum *int32, d *float32, qstride, nb, ntok int, out *float32, ostride int)
//
// The frame of int8half_amd64.h; a packed block is 544 bytes.
TEXT ·q80Rows8AVXVNNI(SB), NOSPLIT, $0-80
	HALFARGS
	CMPQ R10, $4
	JLT  one

four:
	HALF4BEGIN
	HALF4PASS(HALFPF9, Q8BLOCK, 544, fourpf, fourblock, fourend)
	HALF4NEXT
	HALFONE

oneblock:
	VCVTPH2PS (DI), Y13
	VPXOR     Y0, Y0, Y0
	VPXOR     Y1, Y1, Y1
	Q8T1(0, 0)
	Q8T1(1, 1)
	Q8T1(2, 0)
	Q8T1(3, 1)
	Q8T1(4, 0)
	Q8T1(5, 1)
	Q8T1(6, 0)
	Q8T1(7, 1)
	VPADDD    Y1, Y0, Y0
	Q8END(Y0, (DX), (R12), Y4)
	HALFDONE(544)

