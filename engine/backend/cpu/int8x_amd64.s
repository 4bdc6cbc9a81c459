//go:build amd64 && !purego

#include "textflag.h"

// The int8 path's kernels for IQ4_XS, Q3_K and Q2_K (int8x.go), on AVX2:
// per super-block every sub-block dot and its scale are exact integers
// (VPMADDUBSW on unsigned values, or |grid value| against the activations
// with its sign, then VPMADDWD by the int16 scales), and the float work is
// one or two products per super-block, added in order.

// HSUMDX folds the eight int32 lanes of y (low half x) into a GPR.
#define HSUMDX(y, x, t, r) \
	VEXTRACTI128 $1, y, t  \
	VPADDD       t, x, x   \
	VPSHUFD      $0x4e, x, t \
	VPADDD       t, x, x   \
	VPSHUFD      $0xb1, x, t \
	VPADDD       t, x, x   \
	VMOVD        x, r

DATA iq4gridx<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4gridx<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4gridx<>(SB), RODATA|NOPTR, $16

// SBFLOAT adds dd*float(AX) to X0, dd = d[b] * the block's fp16 at h(SI).
#define SBFLOAT(h) \
	MOVWLZX    h(SI), R9   \
	VMOVD      R9, X6      \
	VCVTPH2PS  X6, X6      \
	VMOVSS     (DX), X12   \
	VMULSS     X6, X12, X6 \
	VCVTSI2SSL AX, X13, X13 \
	VMULSS     X13, X6, X6 \
	VADDSS     X6, X0, X0

// IQ4SUB adds sub-block ib's scaled dot into Y8.
#define IQ4SUB(ib) \
	VMOVDQU     (8+16*(ib))(SI), X1 \
	VPSRLW      $4, X1, X2          \
	VINSERTI128 $1, X2, Y1, Y1      \
	VPAND       Y15, Y1, Y1         \
	VPSHUFB     Y1, Y14, Y2         \
	VMOVDQU     (32*(ib))(DI), Y3   \
	VPSIGNB     Y2, Y3, Y3          \
	VPABSB      Y2, Y2              \
	VPMADDUBSW  Y3, Y2, Y2          \
	VPBROADCASTW (2*(ib))(BX), Y4   \
	VPMADDWD    Y4, Y2, Y2          \
	VPADDD      Y2, Y8, Y8

// func iq4xsDotAVX2(w *byte, qs *int8, d *float32, sc *int16, nsb int, acc float32) float32
// sc: each super-block's eight sub-block scales less 32.
TEXT ·iq4xsDotAVX2(SB), NOSPLIT, $0-52
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ sc+24(FP), BX
	MOVQ nsb+32(FP), CX
	VMOVSS acc+40(FP), X0
	MOVL  $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VBROADCASTI128 iq4gridx<>(SB), Y14
	TESTQ CX, CX
	JZ    iq4xs_done

iq4xs_loop:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	VPXOR Y8, Y8, Y8
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
	ADDQ $16, BX
	DECQ CX
	JNZ  iq4xs_loop

iq4xs_done:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// LOWPAIR sets Y1 to the 2-bit levels of groups 2p and 2p+1: the 32 bytes
// at qoff(SI) shifted right by shift, masked by Y15 (3 in every byte).
#define LOWPAIR(qoff, shift) \
	VMOVDQU qoff(SI), Y1   \
	VPSRLW  $(shift), Y1, Y1 \
	VPAND   Y15, Y1, Y1

// PAIRDOT adds groups 2p and 2p+1 into Y8: the levels in Y1 against the
// 32 activations at xoff(DI), each group times its int16 scale at
// soff(BX) and soff+2(BX).
#define PAIRDOT(xoff, soff) \
	VMOVDQU      xoff(DI), Y3    \
	VPMADDUBSW   Y3, Y1, Y1      \
	VPBROADCASTW soff(BX), X4    \
	VPBROADCASTW (soff+2)(BX), X5 \
	VINSERTI128  $1, X5, Y4, Y4  \
	VPMADDWD     Y4, Y1, Y1      \
	VPADDD       Y1, Y8, Y8

// Q3HIGH ORs 4 times bit hbit of the high-bit mask (Y9) into the levels in
// Y1 (Y10: 1 in every byte; not Y13, which SBFLOAT's VEX scalars clear).
#define Q3HIGH(hbit) \
	VPSRLW $(hbit), Y9, Y2 \
	VPAND  Y10, Y2, Y2     \
	VPSLLW $2, Y2, Y2      \
	VPOR   Y2, Y1, Y1

#define Q3PAIR(p) \
	LOWPAIR(32+32*((p)/4), 2*((p)%4)) \
	Q3HIGH(4*((p)/4)+(p)%4)             \
	PAIRDOT(32*(p), 4*(p))

// func q3kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int, acc float32) float32
// sc: each super-block's sixteen group scales (less 32).
TEXT ·q3kDotAVX2(SB), NOSPLIT, $0-60
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R10
	MOVQ sc+32(FP), BX
	MOVQ nsb+40(FP), CX
	VMOVSS acc+48(FP), X0
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
	ADDQ $32, BX
	DECQ CX
	JNZ  q3kd_loop

q3kd_done:
	VMOVSS X0, ret+56(FP)
	VZEROUPPER
	RET

#define Q2PAIR(p) \
	LOWPAIR(16+32*((p)/4), 2*((p)%4)) \
	PAIRDOT(32*(p), 4*(p))

// func q2kDotAVX2(w *byte, qs *int8, d *float32, bs *int16, sc *int16, nsb int, acc float32) float32
// sc: each super-block's sixteen group scales, then its sixteen mins.
TEXT ·q2kDotAVX2(SB), NOSPLIT, $0-60
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R10
	MOVQ sc+32(FP), BX
	MOVQ nsb+40(FP), CX
	VMOVSS acc+48(FP), X0
	MOVL  $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	TESTQ CX, CX
	JZ    q2kd_done

q2kd_loop:
	PREFETCHT0 1024(SI)
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
	ADDQ $64, BX
	DECQ CX
	JNZ  q2kd_loop

q2kd_done:
	VMOVSS X0, ret+56(FP)
	VZEROUPPER
	RET
