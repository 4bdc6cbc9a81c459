//go:build amd64 && !purego

#include "textflag.h"
#include "int8n_amd64.h"
#include "reduce_amd64.h"

// Q4_K's lanes (int8lanes.go) on AVX2, for one token (q4kLanesAVX2) and
// for many at once (q4kLanesNAVX2): there each
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

// Q4KSCALES unpacks the 12 scale bytes of the super-block at SI as ggml
// does: X8 holds the eight scales then the eight mins, as bytes, and X9's
// low eight bytes the mins. AX, R8, R9, R11 and R12 are clobbered.
#define Q4KSCALES \
	MOVL 4(SI), R8 \
	MOVL 8(SI), R9 \
	MOVL 12(SI), R11 \
	MOVL R8, AX \
	ANDL $0x3f3f3f3f, AX \
	VMOVD AX, X8 \
	MOVL R11, AX \
	ANDL $0x0f0f0f0f, AX \
	MOVL R8, R12 \
	SHRL $6, R12 \
	ANDL $0x03030303, R12 \
	SHLL $4, R12 \
	ORL  R12, AX \
	VPINSRD $1, AX, X8, X8 \
	MOVL R9, AX \
	ANDL $0x3f3f3f3f, AX \
	VPINSRD $2, AX, X8, X8 \
	MOVL R11, AX \
	SHRL $4, AX \
	ANDL $0x0f0f0f0f, AX \
	MOVL R9, R12 \
	SHRL $6, R12 \
	ANDL $0x03030303, R12 \
	SHLL $4, R12 \
	ORL  R12, AX \
	VPINSRD $3, AX, X8, X8 \
	VPSRLDQ $8, X8, X9

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
	NARGS
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
	Q4KSCALES
	// Each min twice in its dword: one VPMADDWD with a token's 16-sums
	// gives m[e]*(bs[2e]+bs[2e+1]), the exact product q4kLanesGo takes.
	VPMOVZXBW   X9, X6
	VPUNPCKHWD  X6, X6, X7
	VPUNPCKLWD  X6, X6, X6
	VINSERTI128 $1, X7, Y6, Y6
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

	NTOKS

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
	VPMADDWD Y6, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VMULPS    Y5, Y7, Y7
	VADDPS    64(R11), Y7, Y7
	VMOVUPS   Y7, 64(R11)
	NTOKNEXT(96)
	JNZ  q4kn_tok

	NBLOCKNEXT(144)
	JNZ  q4kn_block

q4kn_done:
	NOUTS

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

// func q4kLanesAVX2(w *byte, qs *int8, d *float32, bs *int16, nsb int, sc *int16, acc *float32)
// One token's 24 Q4_K lanes (int8lanes.go) on AVX2: lanes 0-7 in Y0, 8-15
// in Y6, the mins' 8 in Y7, stored to acc. Per super-block each lane's
// integer sum is q4kLanesGo's (VPMADDUBSW then VPMADDWD by the chunk's
// scale), then scaled and added as there. sc: scratch for the block's
// scales and mins as 16 words (ggml's unpacking of the 12 bytes, built
// in a register).
TEXT ·q4kLanesAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R10
	MOVQ nsb+32(FP), CX
	MOVQ sc+40(FP), BX
	MOVQ acc+48(FP), R15
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VMOVDQU q4knib<>(SB), Y15
	VMOVDQU q4kones<>(SB), Y14
	TESTQ CX, CX
	JZ    q4kl_done

q4kl_loop:
	PREFETCHT0 8192(SI)
	PREFETCHT0 8256(SI)
	Q4KSCALES
	VPMOVZXBD X9, Y9
	VPMOVZXBW X8, Y8
	VMOVDQU Y8, (BX)
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5

#define Q4KCHUNK(p) \
	VMOVDQU      (16+32*(p))(SI), Y1 \
	VPAND        Y15, Y1, Y2         \
	VPSRLW       $4, Y1, Y1          \
	VPAND        Y15, Y1, Y1         \
	VPMADDUBSW   (64*(p))(DI), Y2, Y2 \
	VPBROADCASTW (4*(p))(BX), Y3     \
	VPMADDWD     Y3, Y2, Y2          \
	VPADDD       Y2, Y4, Y4          \
	VPMADDUBSW   (64*(p)+32)(DI), Y1, Y1 \
	VPBROADCASTW (4*(p)+2)(BX), Y3   \
	VPMADDWD     Y3, Y1, Y1          \
	VPADDD       Y1, Y5, Y5

	Q4KCHUNK(0)
	Q4KCHUNK(1)
	Q4KCHUNK(2)
	Q4KCHUNK(3)
	MOVWLZX (SI), AX
	VMOVD   AX, X10
	VCVTPH2PS X10, X10
	VMOVSS  (DX), X11
	VMULSS  X10, X11, X11
	VBROADCASTSS X11, Y11
	VCVTDQ2PS Y4, Y4
	VMULPS    Y11, Y4, Y4
	VADDPS    Y4, Y0, Y0
	VCVTDQ2PS Y5, Y5
	VMULPS    Y11, Y5, Y5
	VADDPS    Y5, Y6, Y6
	MOVWLZX 2(SI), AX
	VMOVD   AX, X10
	VCVTPH2PS X10, X10
	VMOVSS  (DX), X12
	VMULSS  X10, X12, X12
	VBROADCASTSS X12, Y12
	VMOVDQU  (R10), Y13
	VPMADDWD Y14, Y13, Y13
	VPMULLD  Y9, Y13, Y13
	VCVTDQ2PS Y13, Y13
	VMULPS    Y12, Y13, Y13
	VADDPS    Y13, Y7, Y7
	NBLOCKNEXT(144)
	JNZ  q4kl_loop

q4kl_done:
	VMOVUPS Y0, (R15)
	VMOVUPS Y6, 32(R15)
	VMOVUPS Y7, 64(R15)
	VZEROUPPER
	RET
