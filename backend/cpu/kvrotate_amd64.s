//go:build amd64 && !purego

#include "textflag.h"

// The in-register passes of the Walsh-Hadamard transform: lanes j apart
// (1, 2, 4) pair up; the lower of a pair becomes u+v, the upper u-v (as
// s-y: the partner minus itself), each one float32 add as rotate's.
#define PASSIN(imm, y, s, t) \
	VADDPS   s, y, t \
	VSUBPS   y, s, s \
	VBLENDPS $imm, s, t, y

#define PASS1(y) \
	VPERMILPS $0xB1, y, Y9 \
	PASSIN(0xAA, y, Y9, Y10)

#define PASS2(y) \
	VPERMILPS $0x4E, y, Y9 \
	PASSIN(0xCC, y, Y9, Y10)

#define PASS4(y) \
	VPERM2F128 $0x01, y, y, Y9 \
	PASSIN(0xF0, y, Y9, Y10)

// BFLY: u, v (registers) become u+v, u-v.
#define BFLY(u, v) \
	VADDPS  v, u, Y11 \
	VSUBPS  v, u, v \
	VMOVAPS Y11, u

// func fwht64AVX2(x *float32, scale float32)
// 64 values times scale, then the transform's butterflies one apart to 32
// apart, in place: rotate's bits (kvrotate.go).
TEXT ·fwht64AVX2(SB), NOSPLIT, $0-12
	MOVQ         x+0(FP), SI
	VBROADCASTSS scale+8(FP), Y15
	VMULPS       (SI), Y15, Y0
	VMULPS       32(SI), Y15, Y1
	VMULPS       64(SI), Y15, Y2
	VMULPS       96(SI), Y15, Y3
	VMULPS       128(SI), Y15, Y4
	VMULPS       160(SI), Y15, Y5
	VMULPS       192(SI), Y15, Y6
	VMULPS       224(SI), Y15, Y7
	PASS1(Y0)
	PASS1(Y1)
	PASS1(Y2)
	PASS1(Y3)
	PASS1(Y4)
	PASS1(Y5)
	PASS1(Y6)
	PASS1(Y7)
	PASS2(Y0)
	PASS2(Y1)
	PASS2(Y2)
	PASS2(Y3)
	PASS2(Y4)
	PASS2(Y5)
	PASS2(Y6)
	PASS2(Y7)
	PASS4(Y0)
	PASS4(Y1)
	PASS4(Y2)
	PASS4(Y3)
	PASS4(Y4)
	PASS4(Y5)
	PASS4(Y6)
	PASS4(Y7)
	BFLY(Y0, Y1)
	BFLY(Y2, Y3)
	BFLY(Y4, Y5)
	BFLY(Y6, Y7)
	BFLY(Y0, Y2)
	BFLY(Y1, Y3)
	BFLY(Y4, Y6)
	BFLY(Y5, Y7)
	BFLY(Y0, Y4)
	BFLY(Y1, Y5)
	BFLY(Y2, Y6)
	BFLY(Y3, Y7)
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	VMOVUPS Y2, 64(SI)
	VMOVUPS Y3, 96(SI)
	VMOVUPS Y4, 128(SI)
	VMOVUPS Y5, 160(SI)
	VMOVUPS Y6, 192(SI)
	VMOVUPS Y7, 224(SI)
	VZEROUPPER
	RET
