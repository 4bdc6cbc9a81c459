//go:build amd64 && !purego

#include "textflag.h"

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
// BX, scale at DX) into X0, as dotQ6KAVX2's loop does; Y15/Y14/R14 as set
// up there.
#define Q6KBLOCK \
	PREFETCHT0 2048(SI) \
	PREFETCHT0 2112(SI) \
	PREFETCHT0 2176(SI) \
	PREFETCHT0 2240(SI) \
	VPMOVSXBW    192(SI), Y11 \
	VINSERTI128  $1, X11, Y11, Y9 \
	VEXTRACTI128 $1, Y11, X10 \
	VINSERTI128  $1, X10, Y10, Y10 \
	VPXOR Y8, Y8, Y8 \
	Q6HALF(0, 128, 0, Y9, Y8, Y15, Y14) \
	Q6HALF(64, 160, 128, Y10, Y8, Y15, Y14) \
	HSUMD(Y8, X8, X1, AX) \
	VMOVDQU  (BX), Y4 \
	VPMADDWD Y11, Y4, Y4 \
	HSUMD(Y4, X4, X1, R8) \
	SHLL     $5, R8 \
	SUBL     R8, AX \
	MOVWLZX    208(SI), R9 \
	VMOVD      R9, X6 \
	VCVTPH2PS  X6, X6 \
	VMOVSS     (DX), X12 \
	VMULSS     X6, X12, X6 \
	VCVTSI2SSL AX, X13, X13 \
	VMULSS     X13, X6, X6 \
	VADDSS     X6, X0, X0

// func dotQ6KAVX2(w *byte, qs *int8, d *float32, bs *int16, nsb int) float32
TEXT ·dotQ6KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), BX
	MOVQ nsb+32(FP), CX
	VXORPS X0, X0, X0
	MOVL  $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL  $0x03030303, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	LEAQ  q6kshuf<>(SB), R14
	TESTQ CX, CX
	JZ    q6k_done

q6k_loop:
	Q6KBLOCK
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q6k_loop

q6k_done:
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func dotQ6KRowsAVX2(w *byte, wstride int, qs *int8, d *float32, bs *int16, nsb, nrows int, out *float32)
// out[r] = dotQ6KAVX2(row r) for nrows rows (row r at w+r*wstride) against
// one token: the same sums, without a call per row.
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
