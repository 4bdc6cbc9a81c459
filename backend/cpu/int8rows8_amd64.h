// Macros of the eight-row AVX2 kernels (int8rows8_amd64.s,
// int8rows8q5_amd64.s, int8rows8q6_amd64.s): packed groups of eight rows,
// each row in a dword lane (int8rows8.go).

// The frame of the three kernels, whose arguments are (w *byte, qs *int8,
// bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32,
// ostride int): DI the group's super-block, R9 scr, R8 qstride, CX the
// super-block; per token group BX its activations, R11 two tokens on, DX
// its 16-sums (R13 apart), R12 its scales (R14 apart), AX its float sums
// (at sums(R9) on), R10 the tokens left.

// R8X is log2 of a token's activation bytes a super-block: 8, or 9 for
// split ones (iq4xsRows8AVX2); a kernel's file may define it first.
#ifndef R8X
#define R8X 8
#endif

// R8LOAD loads the arguments; R13 is the 16-sums' stride (a token's
// values/8 bytes, from qstride). R8ARGS(lbl, sums) then zeroes the
// tokens' sums.
#define R8LOAD \
	MOVQ w+0(FP), DI \
	MOVQ qstride+32(FP), R8 \
	MOVQ scr+56(FP), R9 \
	MOVQ R8, R13 \
	SHRQ $(R8X-5), R13 \
	MOVQ nsb+40(FP), R14 \
	SHLQ $2, R14 \
	MOVQ ntok+48(FP), R10

#define R8ARGS(lbl, sums) \
	R8LOAD \
	LEAQ   sums(R9), AX \
	VXORPS Y0, Y0, Y0 \
lbl: \
	VMOVUPS Y0, (AX) \
	ADDQ    $32, AX \
	DECQ    R10 \
	JNZ     lbl \
	XORQ    CX, CX

// R8TOKS(sums) points BX, DX, R12 and AX at token 0's for super-block CX;
// R10 the tokens.
#define R8TOKS(sums) \
	MOVQ CX, BX \
	SHLQ $R8X, BX \
	ADDQ qs+8(FP), BX \
	MOVQ CX, DX \
	SHLQ $5, DX \
	ADDQ bs+16(FP), DX \
	MOVQ CX, R12 \
	SHLQ $2, R12 \
	ADDQ d+24(FP), R12 \
	LEAQ sums(R9), AX \
	MOVQ ntok+48(FP), R10

// R8FOUR starts a group of four tokens: R11 two tokens on, their
// super-block sums (Y4-Y7) zero.
#define R8FOUR \
	LEAQ  (BX)(R8*2), R11 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7

// R8DONE4(END) ends a group of four tokens (END their super-block's
// float step, S in Y4-Y7) and moves to the next four.
#define R8DONE4(END) \
	MOVQ DX, SI \
	MOVQ R12, R11 \
	END(Y4, (AX)) \
	ADDQ R13, SI \
	ADDQ R14, R11 \
	END(Y5, 32(AX)) \
	ADDQ R13, SI \
	ADDQ R14, R11 \
	END(Y6, 64(AX)) \
	ADDQ R13, SI \
	ADDQ R14, R11 \
	END(Y7, 96(AX)) \
	LEAQ (BX)(R8*4), BX \
	LEAQ (DX)(R13*4), DX \
	LEAQ (R12)(R14*4), R12 \
	SUBQ $-128, AX \
	SUBQ $4, R10

// R8DONE1(END) ends one token (S in Y4) and moves to the next.
#define R8DONE1(END) \
	MOVQ DX, SI \
	MOVQ R12, R11 \
	END(Y4, (AX)) \
	ADDQ R8, BX \
	ADDQ R13, DX \
	ADDQ R14, R12 \
	ADDQ $32, AX \
	DECQ R10

// R8LOOP4(END) ends a group of four tokens (R8DONE4) and loops to the
// label four while four are left; R8ONE (labels one and onetok) starts
// the tokens left one at a time, or leaves for next.
#define R8LOOP4(END) \
	R8DONE4(END) \
	CMPQ R10, $4 \
	JGE  four

#define R8ONE \
one: \
	TESTQ R10, R10 \
	JZ    next \
onetok:

// OFFEND(pairs, k, dd, S, acc): a token's super-block with the values'
// offset 2^k taken off: c, the scale pairs at pairs(R9) by its 16-sums
// at SI (BSDOT), then acc + (d_a d)(S - 2^k c), d_a at R11, the rows' d
// at dd(R9).
#define OFFEND(pairs, k, dd, S, acc) \
	BSDOT(pairs) \
	VPSLLD       $k, Y9, Y9 \
	VPSUBD       Y9, S, S \
	F8END(dd, S, acc)

// F8END(dd, S, acc): acc + (d_a d)S, d_a at R11, the rows' d at dd(R9).
#define F8END(dd, S, acc) \
	VBROADCASTSS (R11), Y11 \
	VMULPS       dd(R9), Y11, Y12 \
	VCVTDQ2PS    S, S \
	VMULPS       S, Y12, S \
	VADDPS       acc, S, S \
	VMOVUPS      S, acc

// R8NEXT(size, lbl) moves to the next super-block of size bytes, or on.
#define R8NEXT(size, lbl) \
	ADDQ $size, DI \
	INCQ CX \
	CMPQ CX, nsb+40(FP) \
	JLT  lbl

// R8PAIRS(k, sc03, sc47, m03, m47): sub-blocks k and 4+k's scale and min
// pairs into scr.
#define R8PAIRS(k, sc03, sc47, m03, m47) \
	VPSHUFB ·r8pair+(32*(k))(SB), sc03, Y12 \
	VMOVDQU Y12, (32*(k))(R9) \
	VPSHUFB ·r8pair+(32*(k))(SB), sc47, Y12 \
	VMOVDQU Y12, (128+32*(k))(R9) \
	VPSHUFB ·r8pair+(32*(k))(SB), m03, Y12 \
	VMOVDQU Y12, (256+32*(k))(R9) \
	VPSHUFB ·r8pair+(32*(k))(SB), m47, Y12 \
	VMOVDQU Y12, (384+32*(k))(R9)

// R8SCALES decodes the eight rows' scales, mins, d and dmin of the
// super-block at DI into scr (R9), as quant.K4ScaleMins: sub-block j < 4
// from the low six bits of bytes j and 4+j, 4+i from byte 8+i's nibbles
// and the top two bits of bytes i and 4+i. Y0-Y12 clobbered.
#define R8SCALES \
	VMOVDQU      32(DI), Y0 \
	VMOVDQU      64(DI), Y1 \
	VMOVDQU      96(DI), Y2 \
	VPBROADCASTD ·r8c3f(SB), Y3 \
	VPBROADCASTD ·r8c0f(SB), Y4 \
	VPBROADCASTD ·r8c30(SB), Y5 \
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
	VPSHUFB      ·r8dh(SB), Y0, Y0 \
	VPERMQ       $0xd8, Y0, Y0 \
	VCVTPH2PS    X0, Y1 \
	VEXTRACTI128 $1, Y0, X2 \
	VCVTPH2PS    X2, Y2 \
	VMOVUPS      Y1, 512(R9) \
	VMOVUPS      Y2, 544(R9)

// PF9B(off, b) prefetches the nine lines from off(b), PF9(off) from
// off(DI).
#define PF9B(off, b) \
	PREFETCHT0 (off)(b) \
	PREFETCHT0 (off+64)(b) \
	PREFETCHT0 (off+128)(b) \
	PREFETCHT0 (off+192)(b) \
	PREFETCHT0 (off+256)(b) \
	PREFETCHT0 (off+320)(b) \
	PREFETCHT0 (off+384)(b) \
	PREFETCHT0 (off+448)(b) \
	PREFETCHT0 (off+512)(b)

#define PF9(off) PF9B(off, DI)

// R8PF prefetches a super-block 12 KiB ahead (about the next group of a
// 2560-column Q4_K matrix): its 18 lines. The hardware's prefetch alone
// left batch-1 decode short of the bandwidth; 4 KiB ahead held L110's at
// 89-97% of it (Q4_K_M), 12 KiB gives 100-108% of what the streaming
// measure reads (Q4_K_M +12-17%, Q6_K +7-9%, Q5_K_M +17%), prompts and
// larger batches unchanged.
#define R8PF \
	PF9(12288) \
	PF9(12864)

// R8PF2: Q5_K's four more lines.
#define R8PF2 \
	PREFETCHT0 (13440)(DI) \
	PREFETCHT0 (13504)(DI) \
	PREFETCHT0 (13568)(DI) \
	PREFETCHT0 (13632)(DI)

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

// BSDOT(pairs) is sum over k of the 16-bit pairs at pairs+32k(R9) (k 0-7)
// by a token's 16-sums dword k at SI, in Y9 (Y8, Y10 clobbered).
#define BSDOT(pairs) \
	VPBROADCASTD 0(SI), Y8 \
	VPMADDWD     (pairs)(R9), Y8, Y9 \
	VPBROADCASTD 4(SI), Y8 \
	VPMADDWD     (pairs+32)(R9), Y8, Y10 \
	VPBROADCASTD 8(SI), Y8 \
	VPMADDWD     (pairs+64)(R9), Y8, Y8 \
	VPADDD       Y8, Y9, Y9 \
	VPBROADCASTD 12(SI), Y8 \
	VPMADDWD     (pairs+96)(R9), Y8, Y8 \
	VPADDD       Y8, Y10, Y10 \
	VPBROADCASTD 16(SI), Y8 \
	VPMADDWD     (pairs+128)(R9), Y8, Y8 \
	VPADDD       Y8, Y9, Y9 \
	VPBROADCASTD 20(SI), Y8 \
	VPMADDWD     (pairs+160)(R9), Y8, Y8 \
	VPADDD       Y8, Y10, Y10 \
	VPBROADCASTD 24(SI), Y8 \
	VPMADDWD     (pairs+192)(R9), Y8, Y8 \
	VPADDD       Y8, Y9, Y9 \
	VPBROADCASTD 28(SI), Y8 \
	VPMADDWD     (pairs+224)(R9), Y8, Y8 \
	VPADDD       Y8, Y10, Y10 \
	VPADDD       Y10, Y9, Y9

// R8END(S, acc): a token's super-block: its sums S, the mins by its
// 16-sums at SI, both scaled by its scale at R11, into its sums at acc:
// acc + (d_a d) S - (d_a dmin) M', M' = sum of m_j (bs_2j + bs_2j+1).
#define R8END(S, acc) \
	BSDOT(256) \
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

// ROWS8OUT(lbl, sums) copies the tokens' sums to out and returns.
#define ROWS8OUT(lbl, sums) \
	MOVQ out+64(FP), DI \
	MOVQ ostride+72(FP), SI \
	SHLQ $2, SI \
	LEAQ sums(R9), AX \
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
