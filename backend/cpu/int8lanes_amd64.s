//go:build amd64 && !purego

#include "textflag.h"
#include "reduce_amd64.h"

// Q4_K's lanes (int8lanes.go) for many tokens at once, on AVX2: each
// super-block's 256 nibbles are decoded once into Y8-Y15 and its scales
// once into scratch, then every token takes them: the same integer sums
// and float steps per token as q4kLanesAVX2, so the results are its bits.

DATA q4knib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4knib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4knib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4knib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q4knib<>(SB), RODATA|NOPTR, $32

DATA q4kones<>+0(SB)/8, $0x0001000100010001
DATA q4kones<>+8(SB)/8, $0x0001000100010001
DATA q4kones<>+16(SB)/8, $0x0001000100010001
DATA q4kones<>+24(SB)/8, $0x0001000100010001
GLOBL q4kones<>(SB), RODATA|NOPTR, $32

// NIB2(p, lo, hi): chunk p's 64 nibbles, low then high, from 16+32p(SI).
#define NIB2(p, lo, hi) \
	VMOVDQU (16+32*(p))(SI), hi \
	VPAND   q4knib<>(SB), hi, lo \
	VPSRLW  $4, hi, hi           \
	VPAND   q4knib<>(SB), hi, hi

// TOK2(p, lo, hi): one token's chunk p into Y0 (lanes 0-7) and Y1 (8-15).
#define TOK2(p, lo, hi) \
	VPMADDUBSW (64*(p))(R14), lo, Y2     \
	VPMADDWD   (32+64*(p))(BX), Y2, Y2   \
	VPADDD     Y2, Y0, Y0                \
	VPMADDUBSW (64*(p)+32)(R14), hi, Y3  \
	VPMADDWD   (64+64*(p))(BX), Y3, Y3   \
	VPADDD     Y3, Y1, Y1

// func q4kLanesNAVX2(w *byte, qs *int8, qstride int, d *float32, dstride int, bs *int16, bstride, nsb, ntok int, sc *int16, acc, out *float32, ostride int)
// One row against ntok tokens: token t's 24 lanes (acc[24t:], scratch)
// over the row's super-blocks, folded as foldLanes into out[t*ostride].
// Token t's activations start at qs[t*qstride], d[t*dstride] and
// bs[t*bstride]. sc: 352 bytes of scratch (the scales as words, then each
// as a broadcast vector, then the row's two factors).
TEXT ·q4kLanesNAVX2(SB), NOSPLIT, $0-104
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+24(FP), DX
	MOVQ bs+40(FP), R10
	MOVQ nsb+56(FP), CX
	MOVQ sc+72(FP), BX
	MOVQ ntok+64(FP), R9
	TESTQ R9, R9
	JZ    q4kn_end
	MOVQ acc+80(FP), R11
	VXORPS Y0, Y0, Y0

q4kn_zero:
	VMOVUPS Y0, (R11)
	VMOVUPS Y0, 32(R11)
	VMOVUPS Y0, 64(R11)
	ADDQ $96, R11
	DECQ R9
	JNZ  q4kn_zero
	TESTQ CX, CX
	JZ    q4kn_done

q4kn_block:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	// The scales and mins, as q4kLanesAVX2 unpacks them.
	MOVL 4(SI), R8
	MOVL 8(SI), R9
	MOVL 12(SI), R11
	MOVL R8, AX
	ANDL $0x3f3f3f3f, AX
	VMOVD AX, X8
	MOVL R11, AX
	ANDL $0x0f0f0f0f, AX
	MOVL R8, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, AX
	VPINSRD $1, AX, X8, X8
	MOVL R9, AX
	ANDL $0x3f3f3f3f, AX
	VPINSRD $2, AX, X8, X8
	MOVL R11, AX
	SHRL $4, AX
	ANDL $0x0f0f0f0f, AX
	MOVL R9, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, AX
	VPINSRD $3, AX, X8, X8
	VPSRLDQ $8, X8, X9
	VPMOVZXBD X9, Y6 // the mins as dwords
	VPMOVZXBW X8, Y8
	VMOVDQU Y8, (BX)
	// Scale k (chunk k/2's low or high half) as a broadcast at 32+32k.
	VPBROADCASTW 0(BX), Y9
	VMOVDQU Y9, 32(BX)
	VPBROADCASTW 2(BX), Y9
	VMOVDQU Y9, 64(BX)
	VPBROADCASTW 4(BX), Y9
	VMOVDQU Y9, 96(BX)
	VPBROADCASTW 6(BX), Y9
	VMOVDQU Y9, 128(BX)
	VPBROADCASTW 8(BX), Y9
	VMOVDQU Y9, 160(BX)
	VPBROADCASTW 10(BX), Y9
	VMOVDQU Y9, 192(BX)
	VPBROADCASTW 12(BX), Y9
	VMOVDQU Y9, 224(BX)
	VPBROADCASTW 14(BX), Y9
	VMOVDQU Y9, 256(BX)
	MOVWLZX (SI), AX
	VMOVD   AX, X10
	VCVTPH2PS X10, X10
	VMOVSS  X10, 288(BX)
	MOVWLZX 2(SI), AX
	VMOVD   AX, X10
	VCVTPH2PS X10, X10
	VMOVSS  X10, 292(BX)
	NIB2(0, Y8, Y9)
	NIB2(1, Y10, Y11)
	NIB2(2, Y12, Y13)
	NIB2(3, Y14, Y15)

	MOVQ DI, R14
	MOVQ DX, R13
	MOVQ R10, R12
	MOVQ acc+80(FP), R11
	MOVQ ntok+64(FP), R9

q4kn_tok:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	TOK2(0, Y8, Y9)
	TOK2(1, Y10, Y11)
	TOK2(2, Y12, Y13)
	TOK2(3, Y14, Y15)
	VMOVSS (R13), X4
	VMULSS 288(BX), X4, X4
	VBROADCASTSS X4, Y4
	VCVTDQ2PS Y0, Y0
	VMULPS    Y4, Y0, Y0
	VADDPS    (R11), Y0, Y0
	VMOVUPS   Y0, (R11)
	VCVTDQ2PS Y1, Y1
	VMULPS    Y4, Y1, Y1
	VADDPS    32(R11), Y1, Y1
	VMOVUPS   Y1, 32(R11)
	VMOVSS (R13), X5
	VMULSS 292(BX), X5, X5
	VBROADCASTSS X5, Y5
	VMOVDQU  (R12), Y7
	VPMADDWD q4kones<>(SB), Y7, Y7
	VPMULLD  Y6, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VMULPS    Y5, Y7, Y7
	VADDPS    64(R11), Y7, Y7
	VMOVUPS   Y7, 64(R11)
	ADDQ qstride+16(FP), R14
	MOVQ dstride+32(FP), AX
	LEAQ (R13)(AX*4), R13
	MOVQ bstride+48(FP), AX
	LEAQ (R12)(AX*2), R12
	ADDQ $96, R11
	DECQ R9
	JNZ  q4kn_tok

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R10
	DECQ CX
	JNZ  q4kn_block

q4kn_done:
	MOVQ acc+80(FP), R11
	MOVQ out+88(FP), DI
	MOVQ ostride+96(FP), AX
	SHLQ $2, AX
	MOVQ ntok+64(FP), R9

q4kn_fold:
	VMOVUPS (R11), Y0
	VADDPS  32(R11), Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVUPS 64(R11), Y7
	HSUM8(Y7, X7, X1)
	VSUBSS  X7, X0, X0
	VMOVSS  X0, (DI)
	ADDQ $96, R11
	ADDQ AX, DI
	DECQ R9
	JNZ  q4kn_fold

q4kn_end:
	VZEROUPPER
	RET
