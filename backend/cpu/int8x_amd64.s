//go:build amd64 && !purego

#include "textflag.h"
#include "int8x_amd64.h"

// The int8 path's kernels for IQ4_XS, Q3_K and Q2_K (int8x.go), on AVX2:
// per super-block every sub-block dot and its scale are exact integers
// (VPMADDUBSW on unsigned values, or |grid value| against the activations
// with its sign, then VPMADDWD by the int16 scales), and the float work is
// one or two products per super-block, added in order.

DATA ·iq4lo+0(SB)/8, $0x0000000400000000
DATA ·iq4lo+8(SB)/8, $0x0000000c00000008
DATA ·iq4lo+16(SB)/8, $0x0000001400000010
DATA ·iq4lo+24(SB)/8, $0x0000001c00000018
GLOBL ·iq4lo(SB), RODATA|NOPTR, $32
DATA ·iq4hi+0(SB)/8, $0x0000000200000000
DATA ·iq4hi+8(SB)/8, $0x0000000600000004
DATA ·iq4hi+16(SB)/8, $0x0000000a00000008
DATA ·iq4hi+24(SB)/8, $0x0000000e0000000c
GLOBL ·iq4hi(SB), RODATA|NOPTR, $32

// func iq4xsDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32
// (bs unused: IQ4_XS has no offset or mins; the signature is the others'.)
// sc: scratch for a block's eight scales.
TEXT ·iq4xsDotAVX2(SB), NOSPLIT, $0-52
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ sc+32(FP), BX
	MOVQ nsb+40(FP), CX
	VXORPS X0, X0, X0
	MOVL  $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VBROADCASTI128 ·iq4grid(SB), Y14
	TESTQ CX, CX
	JZ    iq4xs_done

iq4xs_loop:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	VPXOR Y8, Y8, Y8
	IQ4SCALES
	IQ4SUB(0)
	IQ4SUB(1)
	IQ4SUB(2)
	IQ4SUB(3)
	IQ4SUB(4)
	IQ4SUB(5)
	IQ4SUB(6)
	IQ4SUB(7)
	HSUMDX(Y8, X8, X1, AX)
	SBFLOAT(0)
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  iq4xs_loop

iq4xs_done:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

DATA ·q3lo+0(SB)/8, $0
DATA ·q3lo+8(SB)/8, $0x0000000400000004
GLOBL ·q3lo(SB), RODATA|NOPTR, $16
DATA ·q3hi+0(SB)/8, $0x0000000200000000
DATA ·q3hi+8(SB)/8, $0x0000000600000004
GLOBL ·q3hi(SB), RODATA|NOPTR, $16
DATA ·q3m0f+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·q3m0f+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ·q3m0f(SB), RODATA|NOPTR, $16

// func q3kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32
// sc: scratch for a block's sixteen scales.
TEXT ·q3kDotAVX2(SB), NOSPLIT, $0-52
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R10
	MOVQ sc+32(FP), BX
	MOVQ nsb+40(FP), CX
	VXORPS X0, X0, X0
	MOVL  $0x00200020, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL  $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL  $0x01010101, AX
	VMOVD AX, X10
	VPBROADCASTD X10, Y10
	TESTQ CX, CX
	JZ    q3kd_done

q3kd_loop:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	Q3SCALES(Y11)
	VMOVDQU (SI), Y9
	VPXOR Y8, Y8, Y8
	Q3PAIR(0)
	Q3PAIR(1)
	Q3PAIR(2)
	Q3PAIR(3)
	Q3PAIR(4)
	Q3PAIR(5)
	Q3PAIR(6)
	Q3PAIR(7)
	HSUMDX(Y8, X8, X1, AX)
	// the levels' offset of 4: 4 * sum_g scale_g * 16-sum_g
	VMOVDQU  (R10), Y4
	VPMADDWD (BX), Y4, Y4
	HSUMDX(Y4, X4, X1, R8)
	SHLL     $2, R8
	SUBL     R8, AX
	SBFLOAT(108)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R10
	DECQ CX
	JNZ  q3kd_loop

q3kd_done:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func q2kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int) float32
// sc: scratch for a block's sixteen scales and sixteen mins (int16).
TEXT ·q2kDotAVX2(SB), NOSPLIT, $0-52
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R10
	MOVQ sc+32(FP), BX
	MOVQ nsb+40(FP), CX
	VXORPS X0, X0, X0
	MOVL  $0x000f000f, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL  $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	TESTQ CX, CX
	JZ    q2kd_done

q2kd_loop:
	PREFETCHT0 1024(SI)
	VPMOVZXBW (SI), Y5
	VPAND     Y11, Y5, Y6
	VMOVDQU   Y6, (BX)
	VPSRLW    $4, Y5, Y5
	VMOVDQU   Y5, 32(BX)
	VPXOR Y8, Y8, Y8
	Q2PAIR(0)
	Q2PAIR(1)
	Q2PAIR(2)
	Q2PAIR(3)
	Q2PAIR(4)
	Q2PAIR(5)
	Q2PAIR(6)
	Q2PAIR(7)
	HSUMDX(Y8, X8, X1, AX)
	SBFLOAT(80)
	// the mins: acc -= (d[b] * dmin) * float(sum_g min_g * 16-sum_g)
	VMOVDQU  (R10), Y4
	VPMADDWD 32(BX), Y4, Y4
	HSUMDX(Y4, X4, X1, AX)
	MOVWLZX    82(SI), R9
	VMOVD      R9, X6
	VCVTPH2PS  X6, X6
	VMOVSS     (DX), X12
	VMULSS     X6, X12, X6
	VCVTSI2SSL AX, X13, X13
	VMULSS     X13, X6, X6
	VSUBSS     X6, X0, X0
	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R10
	DECQ CX
	JNZ  q2kd_loop

q2kd_done:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET
