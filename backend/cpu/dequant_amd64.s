//go:build !purego

#include "textflag.h"

// AVX2 dequantizers for the formats without fused kernels, bit-identical to
// package quant's Go code (TestSIMDDequantMatchesQuant): integers converted
// exactly, then one VMULPS (and one VADDPS/VSUBPS for a min), never an FMA.

// Shift counts for the Q5 formats' fifth bits: element j's bit is bit j of
// qh (j < 16 for low nibbles, 16 + j for high).
DATA q5shifts<>+0(SB)/4, $0
DATA q5shifts<>+4(SB)/4, $1
DATA q5shifts<>+8(SB)/4, $2
DATA q5shifts<>+12(SB)/4, $3
DATA q5shifts<>+16(SB)/4, $4
DATA q5shifts<>+20(SB)/4, $5
DATA q5shifts<>+24(SB)/4, $6
DATA q5shifts<>+28(SB)/4, $7
GLOBL q5shifts<>(SB), RODATA|NOPTR, $32

// iq4grid is IQ4_NL's non-linear grid, as bytes for VPSHUFB.
DATA ·iq4grid+0(SB)/8, $0xf6eaddcfbfad9881
DATA ·iq4grid+8(SB)/8, $0x7159453526190d01
GLOBL ·iq4grid(SB), RODATA|NOPTR, $16

// CONSTS sets Y12 to 15 and Y11 to 1 in every dword lane; AX is clobbered.
#define CONSTS \
	MOVL $15, AX; \
	VMOVD AX, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL $1, AX; \
	VMOVD AX, X11; \
	VPBROADCASTD X11, Y11

// Q5HIGH ORs the fifth bits of elements base..base+7 (qh broadcast in Y10,
// shift counts 0..7 in Y9) into the nibbles in y; t is scratch.
#define Q5HIGH(base, y, t) \
	VPSRLD $(base), Y10, t; \
	VPSRLVD Y9, t, t; \
	VPAND Y11, t, t; \
	VPSLLD $4, t, t; \
	VPOR t, y, y

// LEGACYOUT finishes eight elements in y (ints) at output byte offset o:
// centered (sub, a dword broadcast in Y13) then times d (Y8), or times d
// then plus m (Y7).
#define OUTMIN(y, o) \
	VCVTDQ2PS y, y; \
	VMULPS Y8, y, y; \
	VADDPS Y7, y, y; \
	VMOVUPS y, o(DI)
#define OUTCENTERED(y, o) \
	VPSUBD Y13, y, y; \
	VCVTDQ2PS y, y; \
	VMULPS Y8, y, y; \
	VMOVUPS y, o(DI)

// func q41BlocksAVX2(src *byte, dst *float32, nblocks int)
TEXT ·q41BlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nblocks+16(FP), CX
	CONSTS
	VMOVDQU q5shifts<>(SB), Y9
	MOVL $16, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	TESTQ CX, CX
	JZ    q41BlocksAVX2_done

q41BlocksAVX2_loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X8
	VCVTPH2PS X8, X8
	VBROADCASTSS X8, Y8
	MOVWLZX 2(SI), AX
	VMOVD   AX, X7
	VCVTPH2PS X7, X7
	VBROADCASTSS X7, Y7
	VPMOVZXBD 4(SI), Y0
	VPAND Y12, Y0, Y1
	VPSRLD $4, Y0, Y2
	OUTMIN(Y1, 0)
	OUTMIN(Y2, 64)
	VPMOVZXBD 12(SI), Y0
	VPAND Y12, Y0, Y1
	VPSRLD $4, Y0, Y2
	OUTMIN(Y1, 32)
	OUTMIN(Y2, 96)
	ADDQ $20, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q41BlocksAVX2_loop

q41BlocksAVX2_done:
	VZEROUPPER
	RET

// func q50BlocksAVX2(src *byte, dst *float32, nblocks int)
TEXT ·q50BlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nblocks+16(FP), CX
	CONSTS
	VMOVDQU q5shifts<>(SB), Y9
	MOVL $16, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	TESTQ CX, CX
	JZ    q50BlocksAVX2_done

q50BlocksAVX2_loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X8
	VCVTPH2PS X8, X8
	VBROADCASTSS X8, Y8
	VPBROADCASTD 2(SI), Y10
	VPMOVZXBD 6(SI), Y0
	VPAND Y12, Y0, Y1
	VPSRLD $4, Y0, Y2
	Q5HIGH(0, Y1, Y3)
	Q5HIGH(16, Y2, Y3)
	OUTCENTERED(Y1, 0)
	OUTCENTERED(Y2, 64)
	VPMOVZXBD 14(SI), Y0
	VPAND Y12, Y0, Y1
	VPSRLD $4, Y0, Y2
	Q5HIGH(8, Y1, Y3)
	Q5HIGH(24, Y2, Y3)
	OUTCENTERED(Y1, 32)
	OUTCENTERED(Y2, 96)
	ADDQ $22, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q50BlocksAVX2_loop

q50BlocksAVX2_done:
	VZEROUPPER
	RET

// func q51BlocksAVX2(src *byte, dst *float32, nblocks int)
TEXT ·q51BlocksAVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nblocks+16(FP), CX
	CONSTS
	VMOVDQU q5shifts<>(SB), Y9
	MOVL $16, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	TESTQ CX, CX
	JZ    q51BlocksAVX2_done

q51BlocksAVX2_loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X8
	VCVTPH2PS X8, X8
	VBROADCASTSS X8, Y8
	MOVWLZX 2(SI), AX
	VMOVD   AX, X7
	VCVTPH2PS X7, X7
	VBROADCASTSS X7, Y7
	VPBROADCASTD 4(SI), Y10
	VPMOVZXBD 8(SI), Y0
	VPAND Y12, Y0, Y1
	VPSRLD $4, Y0, Y2
	Q5HIGH(0, Y1, Y3)
	Q5HIGH(16, Y2, Y3)
	OUTMIN(Y1, 0)
	OUTMIN(Y2, 64)
	VPMOVZXBD 16(SI), Y0
	VPAND Y12, Y0, Y1
	VPSRLD $4, Y0, Y2
	Q5HIGH(8, Y1, Y3)
	Q5HIGH(24, Y2, Y3)
	OUTMIN(Y1, 32)
	OUTMIN(Y2, 96)
	ADDQ $24, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q51BlocksAVX2_loop

q51BlocksAVX2_done:
	VZEROUPPER
	RET

// func gridRunAVX2(q *byte, qstride int, scales *float32, n int, y *float32, grid *int8)
// n blocks of 16 index bytes (block i at q+i*qstride, its scale at
// scales[i]) into a 16-value grid (IQ4_NL's, MXFP4's): y[j] = scale *
// grid[low nibble j], y[j+16] = scale * grid[high].
TEXT ·gridRunAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ qstride+8(FP), BX
	MOVQ scales+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ y+32(FP), DI
	MOVQ grid+40(FP), AX
	VMOVDQU (AX), X13
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X12
	VPBROADCASTD X12, X12
	TESTQ CX, CX
	JZ    iq4_done

iq4_loop:
	VBROADCASTSS (DX), Y8
	VMOVDQU (SI), X0
	VPAND   X12, X0, X1
	VPSRLW  $4, X0, X2
	VPAND   X12, X2, X2
	VPSHUFB X1, X13, X1
	VPSHUFB X2, X13, X2
	VPMOVSXBD X1, Y3
	VPSRLDQ $8, X1, X1
	VPMOVSXBD X1, Y4
	VPMOVSXBD X2, Y5
	VPSRLDQ $8, X2, X2
	VPMOVSXBD X2, Y6
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VMULPS Y8, Y3, Y3
	VMULPS Y8, Y4, Y4
	VMULPS Y8, Y5, Y5
	VMULPS Y8, Y6, Y6
	VMOVUPS Y3, (DI)
	VMOVUPS Y4, 32(DI)
	VMOVUPS Y5, 64(DI)
	VMOVUPS Y6, 96(DI)
	ADDQ BX, SI
	ADDQ $4, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  iq4_loop

iq4_done:
	VZEROUPPER
	RET

// func bf16RunAVX2(src *byte, dst *float32, n int)
// n (a multiple of 8) bfloat16s widened: each the top half of a float32.
TEXT ·bf16RunAVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   bf16_done

bf16_loop:
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  bf16_loop

bf16_done:
	VZEROUPPER
	RET

// func q2kAVX2(qs *byte, dl, ml *float32, y *float32)
// One Q2_K super-block's 256 values from its 64 bytes of 2-bit levels and
// the sixteen groups' scales dl and mins ml: y = dl*level - ml.
TEXT ·q2kAVX2(SB), NOSPLIT, $0-32
	MOVQ qs+0(FP), SI
	MOVQ dl+8(FP), BX
	MOVQ ml+16(FP), DX
	MOVQ y+24(FP), DI
	MOVL $3, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12

#define Q2KHALF(qoff, shift, g, o) \
	VPMOVZXBD qoff(SI), Y0; \
	VPSRLD $(shift), Y0, Y0; \
	VPAND Y12, Y0, Y0; \
	VCVTDQ2PS Y0, Y0; \
	VBROADCASTSS ((g)*4)(BX), Y1; \
	VBROADCASTSS ((g)*4)(DX), Y2; \
	VMULPS Y1, Y0, Y0; \
	VSUBPS Y2, Y0, Y0; \
	VMOVUPS Y0, o(DI)

	Q2KHALF(0, 0, 0, 0)
	Q2KHALF(8, 0, 0, 32)
	Q2KHALF(16, 0, 1, 64)
	Q2KHALF(24, 0, 1, 96)
	Q2KHALF(0, 2, 2, 128)
	Q2KHALF(8, 2, 2, 160)
	Q2KHALF(16, 2, 3, 192)
	Q2KHALF(24, 2, 3, 224)
	Q2KHALF(0, 4, 4, 256)
	Q2KHALF(8, 4, 4, 288)
	Q2KHALF(16, 4, 5, 320)
	Q2KHALF(24, 4, 5, 352)
	Q2KHALF(0, 6, 6, 384)
	Q2KHALF(8, 6, 6, 416)
	Q2KHALF(16, 6, 7, 448)
	Q2KHALF(24, 6, 7, 480)
	Q2KHALF(32, 0, 8, 512)
	Q2KHALF(40, 0, 8, 544)
	Q2KHALF(48, 0, 9, 576)
	Q2KHALF(56, 0, 9, 608)
	Q2KHALF(32, 2, 10, 640)
	Q2KHALF(40, 2, 10, 672)
	Q2KHALF(48, 2, 11, 704)
	Q2KHALF(56, 2, 11, 736)
	Q2KHALF(32, 4, 12, 768)
	Q2KHALF(40, 4, 12, 800)
	Q2KHALF(48, 4, 13, 832)
	Q2KHALF(56, 4, 13, 864)
	Q2KHALF(32, 6, 14, 896)
	Q2KHALF(40, 6, 14, 928)
	Q2KHALF(48, 6, 15, 960)
	Q2KHALF(56, 6, 15, 992)
	VZEROUPPER
	RET

// func q3kAVX2(qs, hm *byte, dl *float32, y *float32)
// One Q3_K super-block's 256 values from its 2-bit levels, high-bit mask
// and the sixteen groups' scales: y = dl * (level - (bit clear ? 4 : 0)).
TEXT ·q3kAVX2(SB), NOSPLIT, $0-32
	MOVQ qs+0(FP), SI
	MOVQ hm+8(FP), DX
	MOVQ dl+16(FP), BX
	MOVQ y+24(FP), DI
	MOVL $3, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $1, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $4, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	VPXOR Y14, Y14, Y14

#define Q3KHALF2(qoff, hoff, shift, hbit, g, o) \
	VPMOVZXBD qoff(SI), Y0; \
	VPSRLD $(shift), Y0, Y0; \
	VPAND Y12, Y0, Y0; \
	VPMOVZXBD hoff(DX), Y1; \
	VPSRLD $(hbit), Y1, Y1; \
	VPAND Y11, Y1, Y1; \
	VPCMPEQD Y14, Y1, Y1; \
	VPAND Y13, Y1, Y1; \
	VPSUBD Y1, Y0, Y0; \
	VCVTDQ2PS Y0, Y0; \
	VBROADCASTSS ((g)*4)(BX), Y2; \
	VMULPS Y2, Y0, Y0; \
	VMOVUPS Y0, o(DI)

	Q3KHALF2(0, 0, 0, 0, 0, 0)
	Q3KHALF2(8, 8, 0, 0, 0, 32)
	Q3KHALF2(16, 16, 0, 0, 1, 64)
	Q3KHALF2(24, 24, 0, 0, 1, 96)
	Q3KHALF2(0, 0, 2, 1, 2, 128)
	Q3KHALF2(8, 8, 2, 1, 2, 160)
	Q3KHALF2(16, 16, 2, 1, 3, 192)
	Q3KHALF2(24, 24, 2, 1, 3, 224)
	Q3KHALF2(0, 0, 4, 2, 4, 256)
	Q3KHALF2(8, 8, 4, 2, 4, 288)
	Q3KHALF2(16, 16, 4, 2, 5, 320)
	Q3KHALF2(24, 24, 4, 2, 5, 352)
	Q3KHALF2(0, 0, 6, 3, 6, 384)
	Q3KHALF2(8, 8, 6, 3, 6, 416)
	Q3KHALF2(16, 16, 6, 3, 7, 448)
	Q3KHALF2(24, 24, 6, 3, 7, 480)
	Q3KHALF2(32, 0, 0, 4, 8, 512)
	Q3KHALF2(40, 8, 0, 4, 8, 544)
	Q3KHALF2(48, 16, 0, 4, 9, 576)
	Q3KHALF2(56, 24, 0, 4, 9, 608)
	Q3KHALF2(32, 0, 2, 5, 10, 640)
	Q3KHALF2(40, 8, 2, 5, 10, 672)
	Q3KHALF2(48, 16, 2, 5, 11, 704)
	Q3KHALF2(56, 24, 2, 5, 11, 736)
	Q3KHALF2(32, 0, 4, 6, 12, 768)
	Q3KHALF2(40, 8, 4, 6, 12, 800)
	Q3KHALF2(48, 16, 4, 6, 13, 832)
	Q3KHALF2(56, 24, 4, 6, 13, 864)
	Q3KHALF2(32, 0, 6, 7, 14, 896)
	Q3KHALF2(40, 8, 6, 7, 14, 928)
	Q3KHALF2(48, 16, 6, 7, 15, 960)
	Q3KHALF2(56, 24, 6, 7, 15, 992)
	VZEROUPPER
	RET
