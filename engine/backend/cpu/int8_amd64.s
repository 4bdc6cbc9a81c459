//go:build amd64 && !purego

#include "textflag.h"
#include "reduce_amd64.h"

// The int8 path's Q4_0 kernels (int8.go), AVX512-VNNI on 512-bit vectors:
// two blocks per step, block 2k in lanes 0-7 and block 2k+1 in lanes 8-15.
// Lane l of a block holds the exact sum over elements 4l..4l+3 of
// (nibble-8) * activation, the -8 taken through the activations' lane sums
// (q8Acts.sums); it is scaled by (weight scale * activation scale) and
// added into its float lane (multiply, then add, as dotQ40Go). A last odd
// block adds into lanes 0-7 only (a masked add). The sixteen lanes fold
// as fold16.

// q40idx: VPERMPS indices spreading two floats over lanes 0-7 and 8-15.
DATA q40idx<>+0(SB)/8, $0
DATA q40idx<>+8(SB)/8, $0
DATA q40idx<>+16(SB)/8, $0
DATA q40idx<>+24(SB)/8, $0
DATA q40idx<>+32(SB)/8, $0x0000000100000001
DATA q40idx<>+40(SB)/8, $0x0000000100000001
DATA q40idx<>+48(SB)/8, $0x0000000100000001
DATA q40idx<>+56(SB)/8, $0x0000000100000001
GLOBL q40idx<>(SB), RODATA|NOPTR, $64

// PAIRNIBS sets Z1 to the 64 nibbles of blocks b and b+1 (at (SI) and
// 18(SI)) in element order, and Z6 to their two scales (lanes 0-7, 8-15).
#define PAIRNIBS \
	VMOVDQU      2(SI), X1            \
	VINSERTI128  $1, 20(SI), Y1, Y1   \
	VPSRLW       $4, Y1, Y2           \
	VINSERTI64X4 $1, Y2, Z1, Z1       \
	VSHUFI64X2   $0xd8, Z1, Z1, Z1    \
	VPANDD       Z15, Z1, Z1          \
	VPBROADCASTW (SI), X6             \
	VPBROADCASTW 18(SI), X7           \
	VINSERTI128  $1, X7, Y6, Y6       \
	VCVTPH2PS    Y6, Z6

// PAIRTOKEN adds a token's two blocks (activations at qs, lane sums at s,
// scales at dp) into acc; Z2..Z5 scratch.
#define PAIRTOKEN(qs, s, dp, acc) \
	VMOVDQU64 s, Z4          \
	VPSLLD    $3, Z4, Z4     \
	VPSUBD    Z4, Z14, Z5    \
	VPDPBUSD  qs, Z1, Z5     \
	VCVTDQ2PS Z5, Z5         \
	VMOVQ     dp, X3         \
	VPERMPS   Z3, Z13, Z3    \
	VMULPS    Z3, Z6, Z3     \
	VMULPS    Z3, Z5, Z5     \
	VADDPS    Z5, acc, acc

// ONENIBS sets Y1 to block b's 32 nibbles and Y6 to its scale.
#define ONENIBS \
	VMOVDQU      2(SI), X1         \
	VPSRLW       $4, X1, X2        \
	VINSERTI128  $1, X2, Y1, Y1    \
	VPAND        Y15, Y1, Y1       \
	VPBROADCASTW (SI), X6          \
	VCVTPH2PS    X6, Y6

// ONETOKEN adds a token's last block into lanes 0-7 of acc (K1 = 0xff).
#define ONETOKEN(qs, s, dp, acc) \
	VMOVDQU      s, Y4          \
	VPSLLD       $3, Y4, Y4     \
	VPSUBD       Y4, Y14, Y5    \
	VPDPBUSD     qs, Y1, Y5     \
	VCVTDQ2PS    Y5, Y5         \
	VBROADCASTSS dp, Y3         \
	VMULPS       Y3, Y6, Y3     \
	VMULPS       Y3, Y5, Y5     \
	VADDPS       Z5, acc, K1, acc

// FOLD16 leaves hsum8 of (lanes i + lanes i+8) of z in x's lane 0.
#define FOLD16(z, y, x) \
	VEXTRACTF64X4 $1, z, Y2 \
	VADDPS        Y2, y, y  \
	HSUM8(y, x, X2)

#define Q40SETUP \
	MOVL  $0x0F0F0F0F, AX   \
	VPBROADCASTD AX, Z15    \
	VPXORD Z14, Z14, Z14    \
	VMOVDQU64 q40idx<>(SB), Z13 \
	MOVL  $0xff, AX         \
	KMOVW AX, K1

// func dotQ40VNNI(w *byte, qs *int8, d *float32, sums *int32, nb int) float32
TEXT ·dotQ40VNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ sums+24(FP), R8
	MOVQ nb+32(FP), CX
	VPXORD Z0, Z0, Z0
	Q40SETUP
	MOVQ CX, R9
	SHRQ $1, R9
	JZ   q40_tail

q40_loop:
	PREFETCHT0 512(SI)
	PAIRNIBS
	PAIRTOKEN((DI), (R8), (DX), Z0)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	ADDQ $64, R8
	DECQ R9
	JNZ  q40_loop

q40_tail:
	TESTQ $1, CX
	JZ    q40_fold
	ONENIBS
	ONETOKEN((DI), (R8), (DX), Z0)

q40_fold:
	FOLD16(Z0, Y0, X0)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func dot4Q40VNNI(w *byte, qs *int8, d *float32, sums *int32, qstride, dstride, nb int, out *float32)
// out[t] = row . token t for t in 0..3: token t's values at qs+t*qstride,
// its lane sums at sums+t*qstride (bytes), its scales at d+t*dstride.
TEXT ·dot4Q40VNNI(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ sums+24(FP), R8
	MOVQ qstride+32(FP), BX
	MOVQ dstride+40(FP), R9
	MOVQ nb+48(FP), CX
	SHLQ $2, R9
	LEAQ (BX)(BX*2), R10
	LEAQ (R9)(R9*2), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	Q40SETUP
	MOVQ CX, R12
	SHRQ $1, R12
	JZ   q404_tail

q404_loop:
	PREFETCHT0 512(SI)
	PAIRNIBS
	PAIRTOKEN((DI), (R8), (DX), Z0)
	PAIRTOKEN((DI)(BX*1), (R8)(BX*1), (DX)(R9*1), Z8)
	PAIRTOKEN((DI)(BX*2), (R8)(BX*2), (DX)(R9*2), Z9)
	PAIRTOKEN((DI)(R10*1), (R8)(R10*1), (DX)(R11*1), Z10)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	ADDQ $64, R8
	DECQ R12
	JNZ  q404_loop

q404_tail:
	TESTQ $1, CX
	JZ    q404_fold
	ONENIBS
	ONETOKEN((DI), (R8), (DX), Z0)
	ONETOKEN((DI)(BX*1), (R8)(BX*1), (DX)(R9*1), Z8)
	ONETOKEN((DI)(BX*2), (R8)(BX*2), (DX)(R9*2), Z9)
	ONETOKEN((DI)(R10*1), (R8)(R10*1), (DX)(R11*1), Z10)

q404_fold:
	MOVQ out+56(FP), DX
	FOLD16(Z0, Y0, X0)
	VMOVSS X0, 0(DX)
	FOLD16(Z8, Y8, X8)
	VMOVSS X8, 4(DX)
	FOLD16(Z9, Y9, X9)
	VMOVSS X9, 8(DX)
	FOLD16(Z10, Y10, X10)
	VMOVSS X10, 12(DX)
	VZEROUPPER
	RET
