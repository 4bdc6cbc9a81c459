//go:build amd64 && !purego

#include "textflag.h"
#include "reduce_amd64.h"

// The lane form of the Q4_K int8 kernel (int8lanes.go), AVX-512BW: each
// super-block of a row is unpacked once and dotted with every token of
// the pass; per token the sixteen integer lanes and eight min lanes are
// scaled and added into its float lanes in memory.

// q4klanes<>: for chunk p, VPSHUFB masks over the eight scale words (in
// every 128-bit lane): the low 256 bits take word 2p, the high word 2p+1.
DATA q4klanes<>+0(SB)/8, $0x0100010001000100
DATA q4klanes<>+8(SB)/8, $0x0100010001000100
DATA q4klanes<>+16(SB)/8, $0x0100010001000100
DATA q4klanes<>+24(SB)/8, $0x0100010001000100
DATA q4klanes<>+32(SB)/8, $0x0302030203020302
DATA q4klanes<>+40(SB)/8, $0x0302030203020302
DATA q4klanes<>+48(SB)/8, $0x0302030203020302
DATA q4klanes<>+56(SB)/8, $0x0302030203020302
DATA q4klanes<>+64(SB)/8, $0x0504050405040504
DATA q4klanes<>+72(SB)/8, $0x0504050405040504
DATA q4klanes<>+80(SB)/8, $0x0504050405040504
DATA q4klanes<>+88(SB)/8, $0x0504050405040504
DATA q4klanes<>+96(SB)/8, $0x0706070607060706
DATA q4klanes<>+104(SB)/8, $0x0706070607060706
DATA q4klanes<>+112(SB)/8, $0x0706070607060706
DATA q4klanes<>+120(SB)/8, $0x0706070607060706
DATA q4klanes<>+128(SB)/8, $0x0908090809080908
DATA q4klanes<>+136(SB)/8, $0x0908090809080908
DATA q4klanes<>+144(SB)/8, $0x0908090809080908
DATA q4klanes<>+152(SB)/8, $0x0908090809080908
DATA q4klanes<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4klanes<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4klanes<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4klanes<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4klanes<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4klanes<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4klanes<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4klanes<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4klanes<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4klanes<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4klanes<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4klanes<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q4klanes<>(SB), RODATA|NOPTR, $256

// The bodies both kernels share (registers as described at each kernel).

// KSCALES unpacks a super-block's 6-bit scales into Z20..Z23 (for chunk p,
// word 2p in the low 256 bits and 2p+1 in the high, in every 128-bit lane)
// and its mins, one per 16-value pair, into Y13; R8-R14 are scratch.
#define KSCALES \
	MOVL  4(SI), R8 \
	MOVL  8(SI), R9 \
	MOVL  12(SI), R10 \
	MOVL  R10, R11 \
	SHRL  $4, R11 \
	ANDL  $0x0f0f0f0f, R11 \
	MOVL  R9, R12 \
	SHRL  $6, R12 \
	ANDL  $0x03030303, R12 \
	SHLL  $4, R12 \
	ORL   R12, R11 \
	MOVL  R9, R13 \
	ANDL  $0x3f3f3f3f, R13 \
	MOVL  R10, R12 \
	ANDL  $0x0f0f0f0f, R12 \
	MOVL  R8, R14 \
	SHRL  $6, R14 \
	ANDL  $0x03030303, R14 \
	SHLL  $4, R14 \
	ORL   R14, R12 \
	ANDL  $0x3f3f3f3f, R8 \
	VMOVD R8, X9 \
	VPINSRD $1, R12, X9, X9 \
	VPMOVZXBW X9, X9 \
	VMOVD R13, X10 \
	VPINSRD $1, R11, X10, X10 \
	VPMOVZXBW X10, X10 \
	VINSERTI128  $1, X9, Y9, Y9 \
	VINSERTI64X4 $1, Y9, Z9, Z9 \
	VPSHUFB (R15), Z9, Z20 \
	VPSHUFB 64(R15), Z9, Z21 \
	VPSHUFB 128(R15), Z9, Z22 \
	VPSHUFB 192(R15), Z9, Z23 \
	VPUNPCKLWD X10, X10, X11 \
	VPUNPCKHWD X10, X10, X12 \
	VINSERTI128 $1, X12, Y11, Y13

// KCHUNK4 leaves chunk bytes at off as [low nibbles | high nibbles] in z.
#define KCHUNK4(off, z) \
	VMOVDQU off(SI), Y1 \
	VPSRLW  $4, Y1, Y2 \
	VPAND   Y15, Y1, Y1 \
	VPAND   Y15, Y2, Y2 \
	VINSERTI64X4 $1, Y2, Z1, z

// KCHUNK5 is KCHUNK4 with each nibble's fifth bit from qh (Y28): bit lo of
// qh[i] for the low nibbles, bit hi for the high ones (Y29: 0x01 bytes).
#define KCHUNK5(off, lo, hi, z) \
	VMOVDQU off(SI), Y1 \
	VPSRLW  $4, Y1, Y2 \
	VPAND   Y15, Y1, Y1 \
	VPAND   Y15, Y2, Y2 \
	VPSRLW  $lo, Y28, Y3 \
	VPANDD  Y29, Y3, Y3 \
	VPSLLW  $4, Y3, Y3 \
	VPORD   Y3, Y1, Y1 \
	VPSRLW  $hi, Y28, Y3 \
	VPANDD  Y29, Y3, Y3 \
	VPSLLW  $4, Y3, Y3 \
	VPORD   Y3, Y2, Y2 \
	VINSERTI64X4 $1, Y2, Z1, z

// KFACTORS loads the super-block's d (X6) and dmin (X7).
#define KFACTORS \
	MOVWLZX   (SI), AX \
	VMOVD     AX, X6 \
	VCVTPH2PS X6, X6 \
	MOVWLZX   2(SI), AX \
	VMOVD     AX, X7 \
	VCVTPH2PS X7, X7

// KTOKSETUP points R8-R12 at the first token of the pass, R13, R14 and AX
// at the strides between tokens.
#define KTOKSETUP \
	MOVQ DI, R8 \
	MOVQ DX, R9 \
	MOVQ BX, R10 \
	MOVQ acc+72(FP), R11 \
	MOVQ ntok+64(FP), R12 \
	MOVQ qstride+32(FP), R13 \
	MOVQ dstride+40(FP), R14 \
	SHLQ $2, R14 \
	MOVQ bstride+48(FP), AX \
	SHLQ $1, AX

// KTOKEN adds one token's super-block into its lanes and steps to the next.
#define KTOKEN \
	VPMADDUBSW (R8), Z24, Z17 \
	VPMADDWD   Z20, Z17, Z16 \
	VPMADDUBSW 64(R8), Z25, Z17 \
	VPDPWSSD   Z21, Z17, Z16 \
	VPMADDUBSW 128(R8), Z26, Z17 \
	VPDPWSSD   Z22, Z17, Z16 \
	VPMADDUBSW 192(R8), Z27, Z17 \
	VPDPWSSD   Z23, Z17, Z16 \
	VCVTDQ2PS  Z16, Z16 \
	VMULSS     (R9), X6, X3 \
	VBROADCASTSS X3, Z18 \
	VMULPS     Z18, Z16, Z16 \
	VADDPS     (R11), Z16, Z16 \
	VMOVUPS    Z16, (R11) \
	VMOVDQU    (R10), Y1 \
	VPMADDWD   Y13, Y1, Y1 \
	VCVTDQ2PS  Y1, Y1 \
	VMULSS     (R9), X7, X4 \
	VBROADCASTSS X4, Y2 \
	VMULPS     Y2, Y1, Y1 \
	VADDPS     64(R11), Y1, Y1 \
	VMOVUPS    Y1, 64(R11) \
	ADDQ R13, R8 \
	ADDQ R14, R9 \
	ADDQ AX, R10 \
	ADDQ $96, R11

// KFOLD folds one token's lanes into its result and steps to the next.
#define KFOLD \
	VMOVUPS (R11), Y1 \
	VADDPS  32(R11), Y1, Y1 \
	HSUM8(Y1, X1, X2) \
	VMOVUPS 64(R11), Y3 \
	HSUM8(Y3, X3, X2) \
	VSUBSS  X3, X1, X1 \
	VMOVSS  X1, (R9) \
	ADDQ $96, R11 \
	ADDQ $4, R9

// func q4kLanesAVX512(w *byte, qs *int8, d *float32, bs *int16, qstride, dstride, bstride, nsb, ntok int, acc, res *float32)
// acc: ntok*24 floats of lanes (zeroed here); res[t]: token t's folded result:
// (l + l+8) by HSUM8, less the mins' HSUM8.
TEXT ·q4kLanesAVX512(SB), NOSPLIT, $0-88
	MOVQ acc+72(FP), R11
	MOVQ ntok+64(FP), R12
	VPXORD Z0, Z0, Z0
ql_zero:
	VMOVUPS Z0, (R11)
	VMOVUPS Y0, 64(R11)
	ADDQ $96, R11
	DECQ R12
	JNZ  ql_zero
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), BX
	MOVQ nsb+56(FP), CX
	MOVL $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	LEAQ q4klanes<>(SB), R15
	TESTQ CX, CX
	JZ   ql_done

ql_sb:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	KSCALES
	KCHUNK4(16, Z24)
	KCHUNK4(48, Z25)
	KCHUNK4(80, Z26)
	KCHUNK4(112, Z27)
	KFACTORS
	KTOKSETUP

ql_tok:
	KTOKEN
	DECQ R12
	JNZ  ql_tok

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  ql_sb

ql_done:
	MOVQ acc+72(FP), R11
	MOVQ res+80(FP), R9
	MOVQ ntok+64(FP), R12
ql_fold:
	KFOLD
	DECQ R12
	JNZ  ql_fold
	VZEROUPPER
	RET

// Q5_K: as Q4_K with each value's fifth bit from qh (Y28): bit 2p of
// qh[i] for chunk p's low nibbles, bit 2p+1 for its high ones.
// func q5kLanesAVX512(w *byte, qs *int8, d *float32, bs *int16, qstride, dstride, bstride, nsb, ntok int, acc, res *float32)
TEXT ·q5kLanesAVX512(SB), NOSPLIT, $0-88
	MOVQ acc+72(FP), R11
	MOVQ ntok+64(FP), R12
	VPXORD Z0, Z0, Z0
q5l_zero:
	VMOVUPS Z0, (R11)
	VMOVUPS Y0, 64(R11)
	ADDQ $96, R11
	DECQ R12
	JNZ  q5l_zero
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), BX
	MOVQ nsb+56(FP), CX
	MOVL $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Y29
	LEAQ q4klanes<>(SB), R15
	TESTQ CX, CX
	JZ   q5l_done

q5l_sb:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	KSCALES
	VMOVDQU64 16(SI), Y28
	KCHUNK5(48, 0, 1, Z24)
	KCHUNK5(80, 2, 3, Z25)
	KCHUNK5(112, 4, 5, Z26)
	KCHUNK5(144, 6, 7, Z27)
	KFACTORS
	KTOKSETUP

q5l_tok:
	KTOKEN
	DECQ R12
	JNZ  q5l_tok

	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q5l_sb

q5l_done:
	MOVQ acc+72(FP), R11
	MOVQ res+80(FP), R9
	MOVQ ntok+64(FP), R12
q5l_fold:
	KFOLD
	DECQ R12
	JNZ  q5l_fold
	VZEROUPPER
	RET
