//go:build amd64 && !purego

#include "textflag.h"
#include "int8n_amd64.h"

// Q6_K x q8_K (int8k.go) on AVX2: per super-block the scaled sub-block
// dots and the offset correction are exact integers (VPMADDUBSW,
// VPMADDWD), then acc += (dx*d)*S in scalar float, as dotQ6KGo.

// HSUMD folds the eight int32 lanes of y (low half x) into a GPR.
#define HSUMD(y, x, t, r) \
	VEXTRACTI128 $1, y, t  \
	VPADDD       t, x, x   \
	VPSHUFD      $0x4e, x, t \
	VPADDD       t, x, x   \
	VPSHUFD      $0xb1, x, t \
	VPADDD       t, x, x   \
	VMOVD        x, r

// q6kshuf<>: VPSHUFB masks for Q6_K group g (g = 0..3) of a half: the low
// 128-bit lane broadcasts int16 word 2g, the high lane word 2g+1.
DATA q6kshuf<>+0(SB)/8, $0x0100010001000100
DATA q6kshuf<>+8(SB)/8, $0x0100010001000100
DATA q6kshuf<>+16(SB)/8, $0x0302030203020302
DATA q6kshuf<>+24(SB)/8, $0x0302030203020302
DATA q6kshuf<>+32(SB)/8, $0x0504050405040504
DATA q6kshuf<>+40(SB)/8, $0x0504050405040504
DATA q6kshuf<>+48(SB)/8, $0x0706070607060706
DATA q6kshuf<>+56(SB)/8, $0x0706070607060706
DATA q6kshuf<>+64(SB)/8, $0x0908090809080908
DATA q6kshuf<>+72(SB)/8, $0x0908090809080908
DATA q6kshuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kshuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kshuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kshuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kshuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kshuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6kshuf<>(SB), RODATA|NOPTR, $128

// Q6GROUP adds group g of a half into acc: u (32 unsigned 6-bit values)
// times 32 activations at x, each 16 scaled by its sub-block's int8 scale
// (ysc: the half's eight scales as int16 in both lanes).
#define Q6GROUP(u, x, ysc, mask, acc, t) \
	VPMADDUBSW x, u, u     \
	VPSHUFB    mask, ysc, t \
	VPMADDWD   t, u, u     \
	VPADDD     u, acc, acc

// Q6HALF adds half h of a Q6_K block (ql at qlo(SI), qh at qho(SI), 128
// activations at xo(DI)) into acc; m0F, m03 hold 0x0F, 0x03 bytes.
#define Q6HALF(qlo, qho, xo, ysc, acc, m0F, m03) \
	VMOVDQU   qlo(SI), Y1        \
	VMOVDQU   32+qlo(SI), Y2     \
	VMOVDQU   qho(SI), Y3        \
	VPAND     m0F, Y1, Y4        \
	VPAND     m03, Y3, Y5        \
	VPSLLW    $4, Y5, Y5         \
	VPOR      Y5, Y4, Y4         \
	Q6GROUP(Y4, xo(DI), ysc, (R14), acc, Y6) \
	VPAND     m0F, Y2, Y4        \
	VPSRLW    $2, Y3, Y5         \
	VPAND     m03, Y5, Y5        \
	VPSLLW    $4, Y5, Y5         \
	VPOR      Y5, Y4, Y4         \
	Q6GROUP(Y4, 32+xo(DI), ysc, 32(R14), acc, Y6) \
	VPSRLW    $4, Y1, Y4         \
	VPAND     m0F, Y4, Y4        \
	VPSRLW    $4, Y3, Y5         \
	VPAND     m03, Y5, Y5        \
	VPSLLW    $4, Y5, Y5         \
	VPOR      Y5, Y4, Y4         \
	Q6GROUP(Y4, 64+xo(DI), ysc, 64(R14), acc, Y6) \
	VPSRLW    $4, Y2, Y4         \
	VPAND     m0F, Y4, Y4        \
	VPSRLW    $6, Y3, Y5         \
	VPAND     m03, Y5, Y5        \
	VPSLLW    $4, Y5, Y5         \
	VPOR      Y5, Y4, Y4         \
	Q6GROUP(Y4, 96+xo(DI), ysc, 96(R14), acc, Y6)

// Q6KBLOCK adds one Q6_K super-block (at SI; activations at DI, 16-sums at
// BX, scale at DX) into X0; Y15/Y14/R14 as dotQ6KRowsAVX2 sets them.
#define Q6KBLOCK \
	PREFETCHT0 8192(SI) \
	PREFETCHT0 8256(SI) \
	PREFETCHT0 8320(SI) \
	PREFETCHT0 8384(SI) \
	VPMOVSXBW    192(SI), Y11 \
	VINSERTI128  $1, X11, Y11, Y9 \
	VEXTRACTI128 $1, Y11, X10 \
	VINSERTI128  $1, X10, Y10, Y10 \
	VPXOR Y8, Y8, Y8 \
	Q6HALF(0, 128, 0, Y9, Y8, Y15, Y14) \
	Q6HALF(64, 160, 128, Y10, Y8, Y15, Y14) \
	VMOVDQU  (BX), Y4 \
	VPMADDWD Y11, Y4, Y4 \
	VPSLLD   $5, Y4, Y4 \
	VPSUBD   Y4, Y8, Y8 \
	HSUMD(Y8, X8, X1, AX) \
	MOVWLZX    208(SI), R9 \
	VMOVD      R9, X6 \
	VCVTPH2PS  X6, X6 \
	VMOVSS     (DX), X12 \
	VMULSS     X6, X12, X6 \
	VCVTSI2SSL AX, X13, X13 \
	VMULSS     X13, X6, X6 \
	VADDSS     X6, X0, X0

// func dotQ6KRowsAVX2(w *byte, wstride int, qs *int8, d *float32, bs *int16, nsb, nrows int, out *float32)
// out[r] = dotQ6KGo(row r) for nrows rows (row r at w+r*wstride) against
// one token.
TEXT ·dotQ6KRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), R10
	MOVQ wstride+8(FP), R11
	MOVQ qs+16(FP), R12
	MOVQ d+24(FP), R13
	MOVQ bs+32(FP), R15
	MOVL  $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL  $0x03030303, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	LEAQ  q6kshuf<>(SB), R14
	CMPQ  nrows+48(FP), $0
	JLE   q6kr_done

q6kr_row:
	MOVQ R10, SI
	MOVQ R12, DI
	MOVQ R13, DX
	MOVQ R15, BX
	MOVQ nsb+40(FP), CX
	VXORPS X0, X0, X0
	TESTQ CX, CX
	JZ    q6kr_store

q6kr_loop:
	Q6KBLOCK
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q6kr_loop

q6kr_store:
	MOVQ   out+56(FP), R9
	VMOVSS X0, (R9)
	ADDQ   $4, R9
	MOVQ   R9, out+56(FP)
	ADDQ   R11, R10
	DECQ   nrows+48(FP)
	JNZ    q6kr_row

q6kr_done:
	VZEROUPPER
	RET

// Q6_K (dotQ6KGo's sums) for many tokens at once: each super-block's
// 256 six-bit values are decoded once into Y8-Y15 and its scales once
// into scratch. Within a super-block every sum is an exact integer, so
// the order of the integer adds cannot change a bit; the float step per
// token is Q6KBLOCK's.

DATA q6knib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q6knib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q6knib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q6knib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q6knib<>(SB), RODATA|NOPTR, $32

DATA q6kmask3<>+0(SB)/8, $0x0303030303030303
DATA q6kmask3<>+8(SB)/8, $0x0303030303030303
DATA q6kmask3<>+16(SB)/8, $0x0303030303030303
DATA q6kmask3<>+24(SB)/8, $0x0303030303030303
GLOBL q6kmask3<>(SB), RODATA|NOPTR, $32

// Q6DEC(ql, qh, shift, hib, u): 32 six-bit values: ql's nibble (low, or
// high when shift is 4) with bits shift2..shift2+1 of qh above it.
#define Q6DEC(ql, nibshift, qhshift, u) \
	VMOVDQU ql, u                   \
	VPSRLW  $(nibshift), u, u       \
	VPAND   q6knib<>(SB), u, u      \
	VMOVDQU Y7, Y6                  \
	VPSRLW  $(qhshift), Y6, Y6      \
	VPAND   q6kmask3<>(SB), Y6, Y6  \
	VPSLLW  $4, Y6, Y6              \
	VPOR    Y6, u, u

// Q6HALFDEC(qlo, qho, u0, u1, u2, u3): half h's four groups of 32.
#define Q6HALFDEC(qlo, qho, u0, u1, u2, u3) \
	VMOVDQU qho(SI), Y7                \
	Q6DEC(qlo(SI), 0, 0, u0)           \
	Q6DEC(32+qlo(SI), 0, 2, u1)        \
	Q6DEC(qlo(SI), 4, 4, u2)           \
	Q6DEC(32+qlo(SI), 4, 6, u3)

// Q6TOK(u, xo, so): a group's 32 values times a token's activations at
// xo(R14), each 16 by its scale (the vector at so(BX)), into Y0.
#define Q6TOK(u, xo, so) \
	VPMADDUBSW xo(R14), u, Y1 \
	VPMADDWD   so(BX), Y1, Y1 \
	VPADDD     Y1, Y0, Y0

// Q6SCALES(k, mask): scale vector k (group k%4 of half k/4) at 32k(BX),
// from the half's scales in Y9 (as Q6GROUP's VPSHUFB builds it).
#define Q6SCALES(k, ysc, mask) \
	VPSHUFB mask, ysc, Y1 \
	VMOVDQU Y1, (32*(k))(BX)

// func q6kNAVX2(w *byte, qs *int8, qstride int, d *float32, dstride int, bs *int16, bstride, nsb, ntok int, sc *int16, acc, out *float32, ostride int)
// One Q6_K row against ntok tokens: out[t*ostride] is dotQ6KGo of the
// row and token t (activations at qs[t*qstride], d[t*dstride],
// bs[t*bstride]). sc: 320 bytes of scratch; acc: ntok floats.
TEXT ·q6kNAVX2(SB), NOSPLIT, $0-104
	NARGS
	TESTQ R9, R9
	JZ    q6kn_end
	MOVQ acc+80(FP), R11
	VXORPS X0, X0, X0

q6kn_zero:
	VMOVSS X0, (R11)
	ADDQ $4, R11
	DECQ R9
	JNZ  q6kn_zero
	LEAQ q6kshuf<>(SB), R8
	TESTQ CX, CX
	JZ    q6kn_done

q6kn_block:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	VPMOVSXBW    192(SI), Y11
	VMOVDQU      Y11, 256(BX)
	VINSERTI128  $1, X11, Y11, Y9
	Q6SCALES(0, Y9, (R8))
	Q6SCALES(1, Y9, 32(R8))
	Q6SCALES(2, Y9, 64(R8))
	Q6SCALES(3, Y9, 96(R8))
	VEXTRACTI128 $1, Y11, X10
	VINSERTI128  $1, X10, Y10, Y10
	Q6SCALES(4, Y10, (R8))
	Q6SCALES(5, Y10, 32(R8))
	Q6SCALES(6, Y10, 64(R8))
	Q6SCALES(7, Y10, 96(R8))
	MOVWLZX    208(SI), AX
	VMOVD      AX, X1
	VCVTPH2PS  X1, X1
	VMOVSS     X1, 288(BX)
	Q6HALFDEC(0, 128, Y8, Y9, Y10, Y11)
	Q6HALFDEC(64, 160, Y12, Y13, Y14, Y15)

	NTOKS

q6kn_tok:
	VPXOR Y0, Y0, Y0
	Q6TOK(Y8, 0, 0)
	Q6TOK(Y9, 32, 32)
	Q6TOK(Y10, 64, 64)
	Q6TOK(Y11, 96, 96)
	Q6TOK(Y12, 128, 128)
	Q6TOK(Y13, 160, 160)
	Q6TOK(Y14, 192, 192)
	Q6TOK(Y15, 224, 224)
	// The offset's 32 times the scaled 16-sums leave the lanes before
	// their one fold: exact integers, so the same sum as two folds.
	VMOVDQU  (R12), Y4
	VPMADDWD 256(BX), Y4, Y4
	VPSLLD   $5, Y4, Y4
	VPSUBD   Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VMOVSS     (R13), X2
	VMULSS     288(BX), X2, X2
	VCVTSI2SSL AX, X3, X3
	VMULSS     X3, X2, X2
	VADDSS     (R11), X2, X2
	VMOVSS     X2, (R11)
	NTOKNEXT(4)
	JNZ  q6kn_tok

	NBLOCKNEXT(210)
	JNZ  q6kn_block

q6kn_done:
	NOUTS

q6kn_out:
	MOVL (R11), R15
	MOVL R15, (DI)
	ADDQ $4, R11
	ADDQ AX, DI
	DECQ R9
	JNZ  q6kn_out

q6kn_end:
	VZEROUPPER
	RET
