//go:build amd64 && !purego

#include "textflag.h"

// q4kRows8AVX2: Q4_K rows packed eight to a group (packQ4K8) against q8_K
// activations on AVX2, each row in a dword lane: dotQ4KRowGo's integers
// and float steps, so its bits. Per super-block the rows' scales and mins
// are decoded once into scr as 16-bit pairs; then per token each sub-block
// is eight VPMADDUBSW of a packed dword vector (four nibbles of each row)
// by the token's four activations broadcast, summed in 16 bits (at most
// 16 products of 15 by 127 a word: no overflow), then VPMADDWD by the
// scale pair: S exact. The min part takes the activations' 16-sums
// (bs) by the min pairs: minus dotQ4KRowGo's M, so it is subtracted.
//
// scr (bytes): 0 the scale pairs of sub-blocks 0-7, 256 the min pairs,
// 512 d and 544 dmin as floats, 576 each token's eight float sums.

DATA r8nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA r8nib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA r8nib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA r8nib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL r8nib<>(SB), RODATA|NOPTR, $32

DATA r8c3f<>+0(SB)/4, $0x3f3f3f3f
GLOBL r8c3f<>(SB), RODATA|NOPTR, $4
DATA r8c0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL r8c0f<>(SB), RODATA|NOPTR, $4
DATA r8c30<>+0(SB)/4, $0x30303030
GLOBL r8c30<>(SB), RODATA|NOPTR, $4
DATA r8c10<>+0(SB)/4, $0x10101010
GLOBL r8c10<>(SB), RODATA|NOPTR, $4

// r8pair<>+32k: VPSHUFB masks taking byte k of every dword to both its
// words.
DATA r8pair<>+0(SB)/8, $0x8004800480008000
DATA r8pair<>+8(SB)/8, $0x800c800c80088008
DATA r8pair<>+16(SB)/8, $0x8004800480008000
DATA r8pair<>+24(SB)/8, $0x800c800c80088008
DATA r8pair<>+32(SB)/8, $0x8005800580018001
DATA r8pair<>+40(SB)/8, $0x800d800d80098009
DATA r8pair<>+48(SB)/8, $0x8005800580018001
DATA r8pair<>+56(SB)/8, $0x800d800d80098009
DATA r8pair<>+64(SB)/8, $0x8006800680028002
DATA r8pair<>+72(SB)/8, $0x800e800e800a800a
DATA r8pair<>+80(SB)/8, $0x8006800680028002
DATA r8pair<>+88(SB)/8, $0x800e800e800a800a
DATA r8pair<>+96(SB)/8, $0x8007800780038003
DATA r8pair<>+104(SB)/8, $0x800f800f800b800b
DATA r8pair<>+112(SB)/8, $0x8007800780038003
DATA r8pair<>+120(SB)/8, $0x800f800f800b800b
GLOBL r8pair<>(SB), RODATA|NOPTR, $128

// r8dh<>: a lane's four d halves, then its four dmin halves.
DATA r8dh<>+0(SB)/8, $0x0d0c090805040100
DATA r8dh<>+8(SB)/8, $0x0f0e0b0a07060302
DATA r8dh<>+16(SB)/8, $0x0d0c090805040100
DATA r8dh<>+24(SB)/8, $0x0f0e0b0a07060302
GLOBL r8dh<>(SB), RODATA|NOPTR, $32

// R8PAIRS(k, sc03, sc47, m03, m47): sub-blocks k and 4+k's scale and min
// pairs into scr.
#define R8PAIRS(k, sc03, sc47, m03, m47) \
	VPSHUFB r8pair<>+(32*(k))(SB), sc03, Y12 \
	VMOVDQU Y12, (32*(k))(R9) \
	VPSHUFB r8pair<>+(32*(k))(SB), sc47, Y12 \
	VMOVDQU Y12, (128+32*(k))(R9) \
	VPSHUFB r8pair<>+(32*(k))(SB), m03, Y12 \
	VMOVDQU Y12, (256+32*(k))(R9) \
	VPSHUFB r8pair<>+(32*(k))(SB), m47, Y12 \
	VMOVDQU Y12, (384+32*(k))(R9)

// R8SCALES decodes the eight rows' scales, mins, d and dmin of the
// super-block at DI into scr (R9), as quant.K4ScaleMins: sub-block j < 4
// from the low six bits of bytes j and 4+j, 4+i from byte 8+i's nibbles
// and the top two bits of bytes i and 4+i. Y0-Y12 clobbered.
#define R8SCALES \
	VMOVDQU      32(DI), Y0 \
	VMOVDQU      64(DI), Y1 \
	VMOVDQU      96(DI), Y2 \
	VPBROADCASTD r8c3f<>(SB), Y3 \
	VPBROADCASTD r8c0f<>(SB), Y4 \
	VPBROADCASTD r8c30<>(SB), Y5 \
	VPAND        Y3, Y0, Y6 \
	VPAND        Y3, Y1, Y7 \
	VPAND        Y4, Y2, Y8 \
	VPSRLD       $2, Y0, Y9 \
	VPAND        Y5, Y9, Y9 \
	VPOR         Y9, Y8, Y8 \
	VPSRLD       $4, Y2, Y10 \
	VPAND        Y4, Y10, Y10 \
	VPSRLD       $2, Y1, Y9 \
	VPAND        Y5, Y9, Y9 \
	VPOR         Y9, Y10, Y10 \
	R8PAIRS(0, Y6, Y8, Y7, Y10) \
	R8PAIRS(1, Y6, Y8, Y7, Y10) \
	R8PAIRS(2, Y6, Y8, Y7, Y10) \
	R8PAIRS(3, Y6, Y8, Y7, Y10) \
	VMOVDQU      (DI), Y0 \
	VPSHUFB      r8dh<>(SB), Y0, Y0 \
	VPERMQ       $0xd8, Y0, Y0 \
	VCVTPH2PS    X0, Y1 \
	VEXTRACTI128 $1, Y0, X2 \
	VCVTPH2PS    X2, Y2 \
	VMOVUPS      Y1, 512(R9) \
	VMOVUPS      Y2, 544(R9)

// R8PF prefetches a super-block a few ahead: its 18 lines (the hardware's
// prefetch alone left batch-1 decode short of the bandwidth).
#define R8PF \
	PREFETCHT0 (4096)(DI) \
	PREFETCHT0 (4160)(DI) \
	PREFETCHT0 (4224)(DI) \
	PREFETCHT0 (4288)(DI) \
	PREFETCHT0 (4352)(DI) \
	PREFETCHT0 (4416)(DI) \
	PREFETCHT0 (4480)(DI) \
	PREFETCHT0 (4544)(DI) \
	PREFETCHT0 (4608)(DI) \
	PREFETCHT0 (4672)(DI) \
	PREFETCHT0 (4736)(DI) \
	PREFETCHT0 (4800)(DI) \
	PREFETCHT0 (4864)(DI) \
	PREFETCHT0 (4928)(DI) \
	PREFETCHT0 (4992)(DI) \
	PREFETCHT0 (5056)(DI) \
	PREFETCHT0 (5120)(DI) \
	PREFETCHT0 (5184)(DI) 

// R8PF2: Q5_K's four more lines.
#define R8PF2 \
	PREFETCHT0 (5248)(DI) \
	PREFETCHT0 (5312)(DI) \
	PREFETCHT0 (5376)(DI) \
	PREFETCHT0 (5440)(DI) 

// R8LO(off) and R8HI(off): the packed dword vector at off(DI), its low or
// its high nibbles, into Y8.
#define R8LO(off) \
	VPAND (off)(DI), Y15, Y8

#define R8HI(off) \
	VMOVDQU (off)(DI), Y8 \
	VPSRLW  $4, Y8, Y8 \
	VPAND   Y15, Y8, Y8

// R4F(a) and R4(a): four tokens (BX, BX+R8, R11, R11+R8) against Y8 at
// activation offset a, the first products of a sub-block into Y0-Y3, the
// others added.
#define R4BC(a) \
	VPBROADCASTD (a)(BX), Y9 \
	VPBROADCASTD (a)(BX)(R8*1), Y10 \
	VPBROADCASTD (a)(R11), Y11 \
	VPBROADCASTD (a)(R11)(R8*1), Y12

#define R4F(a) \
	R4BC(a) \
	VPMADDUBSW Y9, Y8, Y0 \
	VPMADDUBSW Y10, Y8, Y1 \
	VPMADDUBSW Y11, Y8, Y2 \
	VPMADDUBSW Y12, Y8, Y3

#define R4(a) \
	R4BC(a) \
	VPMADDUBSW Y9, Y8, Y9 \
	VPMADDUBSW Y10, Y8, Y10 \
	VPMADDUBSW Y11, Y8, Y11 \
	VPMADDUBSW Y12, Y8, Y12 \
	VPADDW     Y9, Y0, Y0 \
	VPADDW     Y10, Y1, Y1 \
	VPADDW     Y11, Y2, Y2 \
	VPADDW     Y12, Y3, Y3

// R4SUB(LD, w, a): one sub-block, its packed vectors from w (LD: R8LO or
// R8HI), its activations from a.
#define R4SUB(LD, w, a) \
	LD(w) \
	R4F(a) \
	LD(w+32) \
	R4(a+4) \
	LD(w+64) \
	R4(a+8) \
	LD(w+96) \
	R4(a+12) \
	LD(w+128) \
	R4(a+16) \
	LD(w+160) \
	R4(a+20) \
	LD(w+192) \
	R4(a+24) \
	LD(w+224) \
	R4(a+28)

// R4SCF(j) and R4SC(j): the four tokens' sub-block sums times sub-block
// j's scale pairs, into (or added to) S in Y4-Y7.
#define R4SCF(j) \
	VPMADDWD (32*(j))(R9), Y0, Y4 \
	VPMADDWD (32*(j))(R9), Y1, Y5 \
	VPMADDWD (32*(j))(R9), Y2, Y6 \
	VPMADDWD (32*(j))(R9), Y3, Y7

#define R4SC(j) \
	VPMADDWD (32*(j))(R9), Y0, Y0 \
	VPMADDWD (32*(j))(R9), Y1, Y1 \
	VPMADDWD (32*(j))(R9), Y2, Y2 \
	VPMADDWD (32*(j))(R9), Y3, Y3 \
	VPADDD   Y0, Y4, Y4 \
	VPADDD   Y1, Y5, Y5 \
	VPADDD   Y2, Y6, Y6 \
	VPADDD   Y3, Y7, Y7

// R1F(a), R1(a, y) and R1SUB(LD, w, a): the same for one token (BX), its
// sub-block's products in two chains (Y0, Y1), then added.
#define R1F(a, y) \
	VPBROADCASTD (a)(BX), Y9 \
	VPMADDUBSW   Y9, Y8, y

#define R1(a, y) \
	VPBROADCASTD (a)(BX), Y9 \
	VPMADDUBSW   Y9, Y8, Y9 \
	VPADDW       Y9, y, y

#define R1SUB(LD, w, a) \
	LD(w) \
	R1F(a, Y0) \
	LD(w+32) \
	R1F(a+4, Y1) \
	LD(w+64) \
	R1(a+8, Y0) \
	LD(w+96) \
	R1(a+12, Y1) \
	LD(w+128) \
	R1(a+16, Y0) \
	LD(w+160) \
	R1(a+20, Y1) \
	LD(w+192) \
	R1(a+24, Y0) \
	LD(w+224) \
	R1(a+28, Y1) \
	VPADDW Y1, Y0, Y0

// R8END(S, acc): a token's super-block: its sums S, the mins by its
// 16-sums at SI, both scaled by its scale at R11, into its sums at acc:
// acc + (d_a d) S - (d_a dmin) M', M' = sum of m_j (bs_2j + bs_2j+1).
#define R8END(S, acc) \
	VPBROADCASTD 0(SI), Y8 \
	VPMADDWD     256(R9), Y8, Y9 \
	VPBROADCASTD 4(SI), Y8 \
	VPMADDWD     288(R9), Y8, Y10 \
	VPBROADCASTD 8(SI), Y8 \
	VPMADDWD     320(R9), Y8, Y8 \
	VPADDD       Y8, Y9, Y9 \
	VPBROADCASTD 12(SI), Y8 \
	VPMADDWD     352(R9), Y8, Y8 \
	VPADDD       Y8, Y10, Y10 \
	VPBROADCASTD 16(SI), Y8 \
	VPMADDWD     384(R9), Y8, Y8 \
	VPADDD       Y8, Y9, Y9 \
	VPBROADCASTD 20(SI), Y8 \
	VPMADDWD     416(R9), Y8, Y8 \
	VPADDD       Y8, Y10, Y10 \
	VPBROADCASTD 24(SI), Y8 \
	VPMADDWD     448(R9), Y8, Y8 \
	VPADDD       Y8, Y9, Y9 \
	VPBROADCASTD 28(SI), Y8 \
	VPMADDWD     480(R9), Y8, Y8 \
	VPADDD       Y8, Y10, Y10 \
	VPADDD       Y10, Y9, Y9 \
	VBROADCASTSS (R11), Y11 \
	VMULPS       512(R9), Y11, Y12 \
	VCVTDQ2PS    S, S \
	VMULPS       S, Y12, S \
	VADDPS       acc, S, S \
	VMULPS       544(R9), Y11, Y12 \
	VCVTDQ2PS    Y9, Y9 \
	VMULPS       Y9, Y12, Y9 \
	VSUBPS       Y9, S, S \
	VMOVUPS      S, acc

// ROWS8OUT(lbl) copies the tokens' sums (576(R9) on) to out and returns.
#define ROWS8OUT(lbl) \
	MOVQ out+64(FP), DI \
	MOVQ ostride+72(FP), SI \
	SHLQ $2, SI \
	LEAQ 576(R9), AX \
	MOVQ ntok+48(FP), R10 \
lbl: \
	VMOVUPS (AX), Y0 \
	VMOVUPS Y0, (DI) \
	ADDQ    $32, AX \
	ADDQ    SI, DI \
	DECQ    R10 \
	JNZ     lbl \
	VZEROUPPER \
	RET

// func q4kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// DI the group's super-block, R9 scr, R8 qstride, CX the super-block; per
// token group BX its activations, R11 two tokens on, DX its 16-sums (R13
// apart), R12 its scales (R14 apart), AX its float sums, R10 the tokens
// left.
TEXT ·q4kRows8AVX2(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), DI
	MOVQ qstride+32(FP), R8
	MOVQ scr+56(FP), R9
	MOVQ R8, R13
	SHRQ $3, R13
	MOVQ nsb+40(FP), R14
	SHLQ $2, R14
	MOVQ ntok+48(FP), R10
	LEAQ 576(R9), AX
	VXORPS Y0, Y0, Y0

zero:
	VMOVUPS Y0, (AX)
	ADDQ    $32, AX
	DECQ    R10
	JNZ     zero
	VMOVDQU r8nib<>(SB), Y15
	XORQ    CX, CX

block:
	R8PF
	R8SCALES
	MOVQ CX, BX
	SHLQ $8, BX
	ADDQ qs+8(FP), BX
	MOVQ CX, DX
	SHLQ $5, DX
	ADDQ bs+16(FP), DX
	MOVQ CX, R12
	SHLQ $2, R12
	ADDQ d+24(FP), R12
	LEAQ 576(R9), AX
	MOVQ ntok+48(FP), R10
	CMPQ R10, $4
	JLT  one

four:
	LEAQ  (BX)(R8*2), R11
	R4SUB(R8LO, 128, 0)
	R4SCF(0)
	R4SUB(R8HI, 128, 32)
	R4SC(1)
	R4SUB(R8LO, 384, 64)
	R4SC(2)
	R4SUB(R8HI, 384, 96)
	R4SC(3)
	R4SUB(R8LO, 640, 128)
	R4SC(4)
	R4SUB(R8HI, 640, 160)
	R4SC(5)
	R4SUB(R8LO, 896, 192)
	R4SC(6)
	R4SUB(R8HI, 896, 224)
	R4SC(7)
	MOVQ  DX, SI
	MOVQ  R12, R11
	R8END(Y4, (AX))
	ADDQ  R13, SI
	ADDQ  R14, R11
	R8END(Y5, 32(AX))
	ADDQ  R13, SI
	ADDQ  R14, R11
	R8END(Y6, 64(AX))
	ADDQ  R13, SI
	ADDQ  R14, R11
	R8END(Y7, 96(AX))
	LEAQ  (BX)(R8*4), BX
	LEAQ  (DX)(R13*4), DX
	LEAQ  (R12)(R14*4), R12
	SUBQ  $-128, AX
	SUBQ  $4, R10
	CMPQ  R10, $4
	JGE   four

one:
	TESTQ R10, R10
	JZ    next

onetok:
	R1SUB(R8LO, 128, 0)
	VPMADDWD (R9), Y0, Y4
	R1SUB(R8HI, 128, 32)
	VPMADDWD 32(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8LO, 384, 64)
	VPMADDWD 64(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8HI, 384, 96)
	VPMADDWD 96(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8LO, 640, 128)
	VPMADDWD 128(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8HI, 640, 160)
	VPMADDWD 160(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8LO, 896, 192)
	VPMADDWD 192(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8HI, 896, 224)
	VPMADDWD 224(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	MOVQ DX, SI
	MOVQ R12, R11
	R8END(Y4, (AX))
	ADDQ R8, BX
	ADDQ R13, DX
	ADDQ R14, R12
	ADDQ $32, AX
	DECQ R10
	JNZ  onetok

next:
	ADDQ $1152, DI
	INCQ CX
	CMPQ CX, nsb+40(FP)
	JLT  block

	ROWS8OUT(write)

// Q5_K (q5kRows8AVX2): the same frame and header, its qh dwords v at
// 1152+32v; value l of sub-block j has bit j of qh byte l as its fifth,
// so a word holds at most 4 products of 31 by 127 (sums of four
// VPMADDUBSW a scale product).

// R5BIT(qh, SH, k): bit j of the qh dword vector at qh(DI) moved to bit 4
// (SH $k: VPSLLW 4-j or VPSRLW j-4) and ORed into Y8 (Y14: 0x10).
#define R5BIT(qh, SH, k) \
	VMOVDQU (qh)(DI), Y13 \
	SH      $k, Y13, Y13 \
	VPAND   Y14, Y13, Y13 \
	VPOR    Y13, Y8, Y8

// R5SUB(LD, w, SH, k, a, j): sub-block j for four tokens, S in Y4-Y7.
#define R5SUB(LD, w, SH, k, a, j) \
	LD(w) \
	R5BIT(1152, SH, k) \
	R4F(a) \
	LD(w+32) \
	R5BIT(1184, SH, k) \
	R4(a+4) \
	LD(w+64) \
	R5BIT(1216, SH, k) \
	R4(a+8) \
	LD(w+96) \
	R5BIT(1248, SH, k) \
	R4(a+12) \
	R4SC(j) \
	LD(w+128) \
	R5BIT(1280, SH, k) \
	R4F(a+16) \
	LD(w+160) \
	R5BIT(1312, SH, k) \
	R4(a+20) \
	LD(w+192) \
	R5BIT(1344, SH, k) \
	R4(a+24) \
	LD(w+224) \
	R5BIT(1376, SH, k) \
	R4(a+28) \
	R4SC(j)

// R5ONE(LD, w, SH, k, a, j): the same for one token, S in Y4.
#define R5ONE(LD, w, SH, k, a, j) \
	LD(w) \
	R5BIT(1152, SH, k) \
	R1F(a, Y0) \
	LD(w+32) \
	R5BIT(1184, SH, k) \
	R1F(a+4, Y1) \
	LD(w+64) \
	R5BIT(1216, SH, k) \
	R1(a+8, Y0) \
	LD(w+96) \
	R5BIT(1248, SH, k) \
	R1(a+12, Y1) \
	VPADDW   Y1, Y0, Y0 \
	VPMADDWD (32*(j))(R9), Y0, Y0 \
	VPADDD   Y0, Y4, Y4 \
	LD(w+128) \
	R5BIT(1280, SH, k) \
	R1F(a+16, Y0) \
	LD(w+160) \
	R5BIT(1312, SH, k) \
	R1F(a+20, Y1) \
	LD(w+192) \
	R5BIT(1344, SH, k) \
	R1(a+24, Y0) \
	LD(w+224) \
	R5BIT(1376, SH, k) \
	R1(a+28, Y1) \
	VPADDW   Y1, Y0, Y0 \
	VPMADDWD (32*(j))(R9), Y0, Y0 \
	VPADDD   Y0, Y4, Y4

// func q5kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// As q4kRows8AVX2; a packed super-block is 1408 bytes.
TEXT ·q5kRows8AVX2(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), DI
	MOVQ qstride+32(FP), R8
	MOVQ scr+56(FP), R9
	MOVQ R8, R13
	SHRQ $3, R13
	MOVQ nsb+40(FP), R14
	SHLQ $2, R14
	MOVQ ntok+48(FP), R10
	LEAQ 576(R9), AX
	VXORPS Y0, Y0, Y0

q5zero:
	VMOVUPS Y0, (AX)
	ADDQ    $32, AX
	DECQ    R10
	JNZ     q5zero
	XORQ    CX, CX

q5block:
	R8PF
	R8PF2
	R8SCALES
	VMOVDQU      r8nib<>(SB), Y15
	VPBROADCASTD r8c10<>(SB), Y14
	MOVQ         CX, BX
	SHLQ         $8, BX
	ADDQ         qs+8(FP), BX
	MOVQ         CX, DX
	SHLQ         $5, DX
	ADDQ         bs+16(FP), DX
	MOVQ         CX, R12
	SHLQ         $2, R12
	ADDQ         d+24(FP), R12
	LEAQ         576(R9), AX
	MOVQ         ntok+48(FP), R10
	CMPQ         R10, $4
	JLT          q5one

q5four:
	LEAQ  (BX)(R8*2), R11
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	R5SUB(R8LO, 128, VPSLLW, 4, 0, 0)
	R5SUB(R8HI, 128, VPSLLW, 3, 32, 1)
	R5SUB(R8LO, 384, VPSLLW, 2, 64, 2)
	R5SUB(R8HI, 384, VPSLLW, 1, 96, 3)
	R5SUB(R8LO, 640, VPSLLW, 0, 128, 4)
	R5SUB(R8HI, 640, VPSRLW, 1, 160, 5)
	R5SUB(R8LO, 896, VPSRLW, 2, 192, 6)
	R5SUB(R8HI, 896, VPSRLW, 3, 224, 7)
	MOVQ  DX, SI
	MOVQ  R12, R11
	R8END(Y4, (AX))
	ADDQ  R13, SI
	ADDQ  R14, R11
	R8END(Y5, 32(AX))
	ADDQ  R13, SI
	ADDQ  R14, R11
	R8END(Y6, 64(AX))
	ADDQ  R13, SI
	ADDQ  R14, R11
	R8END(Y7, 96(AX))
	LEAQ  (BX)(R8*4), BX
	LEAQ  (DX)(R13*4), DX
	LEAQ  (R12)(R14*4), R12
	SUBQ  $-128, AX
	SUBQ  $4, R10
	CMPQ  R10, $4
	JGE   q5four

q5one:
	TESTQ R10, R10
	JZ    q5next

q5onetok:
	VPXOR Y4, Y4, Y4
	R5ONE(R8LO, 128, VPSLLW, 4, 0, 0)
	R5ONE(R8HI, 128, VPSLLW, 3, 32, 1)
	R5ONE(R8LO, 384, VPSLLW, 2, 64, 2)
	R5ONE(R8HI, 384, VPSLLW, 1, 96, 3)
	R5ONE(R8LO, 640, VPSLLW, 0, 128, 4)
	R5ONE(R8HI, 640, VPSRLW, 1, 160, 5)
	R5ONE(R8LO, 896, VPSRLW, 2, 192, 6)
	R5ONE(R8HI, 896, VPSRLW, 3, 224, 7)
	MOVQ DX, SI
	MOVQ R12, R11
	R8END(Y4, (AX))
	ADDQ R8, BX
	ADDQ R13, DX
	ADDQ R14, R12
	ADDQ $32, AX
	DECQ R10
	JNZ  q5onetok

q5next:
	ADDQ $1408, DI
	INCQ CX
	CMPQ CX, nsb+40(FP)
	JLT  q5block
	ROWS8OUT(q5write)
