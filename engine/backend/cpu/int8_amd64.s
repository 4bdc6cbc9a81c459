//go:build amd64 && !purego

#include "textflag.h"
#include "reduce_amd64.h"

// The int8 path's kernels (int8.go): Q4_0 weight blocks against activation
// blocks quantized to int8, VPDPBUSD on 256-bit vectors (AVX512-VNNI with
// AVX512VL). Lane l of a block holds elements 4l..4l+3; its integer sum is
// exact, then scaled by (weight scale * activation scale) and added into
// eight float lanes (multiply, then add: two roundings, as dotQ40Go).

// NIBBLES unpacks a Q4_0 block's 16 bytes at src into 32 unsigned nibbles
// in element order (low nibbles, then high) in y; x, xt are scratch.
#define NIBBLES(src, x, xt, y, mask) \
	VMOVDQU     src, x           \
	VPSRLW      $4, x, xt        \
	VINSERTI128 $1, xt, y, y     \
	VPAND       mask, y, y

// LANES adds one token's block into acc: (nibbles-8) . qs, scaled by
// dw * d. nib holds the nibbles, dw the weight scale in every lane,
// eights 8 in every byte; t1..t3 are scratch.
#define LANES(nib, qs, dptr, dw, eights, acc, t1, t2, t3) \
	VPXOR        t1, t1, t1     \
	VPDPBUSD     qs, nib, t1    \
	VPXOR        t2, t2, t2     \
	VPDPBUSD     qs, eights, t2 \
	VPSUBD       t2, t1, t1     \
	VCVTDQ2PS    t1, t1         \
	VBROADCASTSS dptr, t3       \
	VMULPS       dw, t3, t3     \
	VMULPS       t3, t1, t1     \
	VADDPS       t1, acc, acc

// func dotQ40VNNI(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ40VNNI(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VPXOR Y0, Y0, Y0
	MOVL  $0x0F0F0F0F, AX
	VPBROADCASTD AX, Y15
	MOVL  $0x08080808, AX
	VPBROADCASTD AX, Y14
	TESTQ CX, CX
	JZ    q40_done

q40_loop:
	NIBBLES(2(SI), X1, X2, Y1, Y15)
	VPBROADCASTW (SI), X6
	VCVTPH2PS    X6, Y6
	LANES(Y1, (DI), (DX), Y6, Y14, Y0, Y4, Y5, Y7)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q40_loop

q40_done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dot4Q40VNNI(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)
// out[t] = row . token t for t in 0..3; token t's values at qs+t*qstride,
// its scales at d+t*dstride.
TEXT ·dot4Q40VNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ qstride+24(FP), BX
	MOVQ dstride+32(FP), R9
	MOVQ nb+40(FP), CX
	SHLQ $2, R9
	LEAQ (BX)(BX*2), R8
	LEAQ (R9)(R9*2), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	MOVL  $0x0F0F0F0F, AX
	VPBROADCASTD AX, Y15
	MOVL  $0x08080808, AX
	VPBROADCASTD AX, Y14
	TESTQ CX, CX
	JZ    q404_done

q404_loop:
	NIBBLES(2(SI), X1, X2, Y1, Y15)
	VPBROADCASTW (SI), X6
	VCVTPH2PS    X6, Y6
	LANES(Y1, (DI), (DX), Y6, Y14, Y0, Y4, Y5, Y7)
	LANES(Y1, (DI)(BX*1), (DX)(R9*1), Y6, Y14, Y8, Y4, Y5, Y7)
	LANES(Y1, (DI)(BX*2), (DX)(R9*2), Y6, Y14, Y9, Y4, Y5, Y7)
	LANES(Y1, (DI)(R8*1), (DX)(R10*1), Y6, Y14, Y10, Y4, Y5, Y7)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q404_loop

q404_done:
	MOVQ out+48(FP), DX
	HSUM8(Y0, X0, X1)
	VMOVSS X0, (DX)
	HSUM8(Y8, X8, X1)
	VMOVSS X8, 4(DX)
	HSUM8(Y9, X9, X1)
	VMOVSS X9, 8(DX)
	HSUM8(Y10, X10, X1)
	VMOVSS X10, 12(DX)
	VZEROUPPER
	RET
