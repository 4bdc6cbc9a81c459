// Macros of the row-lane int8 kernels (int8rows_amd64.s, which holds
// their data: r16perm, r16iota, iq4nlu8 and the r16c constants).

// R16SETUP zeroes the ntok accumulators and loads the arguments: SI rows,
// R11 rb (R15 3rb), DI qs, DX d, R8 nsum, BX qstride, R9 dstride in bytes,
// CX blocks; Z18 the lane order (from lanes), Z17 its rows' offsets,
// Z19 zero; pf-8(SP) the next group of rows.
#define R16SETUP(lanes) \
	MOVQ acc+72(FP), AX \
	MOVQ ntok+64(FP), R12 \
	VPXORD Z19, Z19, Z19 \
zero_loop: \
	VMOVUPS Z19, (AX) \
	ADDQ $64, AX \
	DECQ R12 \
	JNZ  zero_loop \
	MOVQ w+0(FP), SI \
	MOVQ rb+8(FP), R11 \
	LEAQ (R11)(R11*2), R15 \
	MOVQ qs+16(FP), DI \
	MOVQ d+24(FP), DX \
	MOVQ nsum+32(FP), R8 \
	MOVQ qstride+40(FP), BX \
	MOVQ dstride+48(FP), R9 \
	SHLQ $2, R9 \
	MOVQ nb+56(FP), CX \
	VMOVDQU32 lanes, Z18 \
	VPBROADCASTD R11, Z17 \
	VPMULLD Z18, Z17, Z17 \
	MOVQ R11, AX \
	SHLQ $4, AX \
	ADDQ SI, AX \
	MOVQ AX, pf-8(SP)

// R16BASES points R13, R14 and R10 at rows 4, 8 and 12.
#define R16BASES \
	LEAQ (SI)(R11*4), R13 \
	LEAQ (SI)(R11*8), R14 \
	LEAQ (R13)(R11*8), R10

// R16SCALES gathers the sixteen rows' fp16 scales (at SI) into Z20 in
// lane order, as floats.
#define R16SCALES \
	KXNORW K2, K2, K2 \
	VPGATHERDD (SI)(Z17*1), K2, Z20 \
	VPMOVDW    Z20, Y20 \
	VCVTPH2PS  Y20, Z20

// R16LOAD32 loads sixteen rows' 32 bytes at off and leaves dword v of
// every row in Z(8+v): Z(i) = row i | row i+8, then 8x8 dword transposes
// in each 256-bit half; lanes in r16perm's order.
#define R16LOAD32(off) \
	R16BASES \
	VMOVDQU      off(SI), Y0 \
	VINSERTI64X4 $1, off(R14), Z0, Z0 \
	VMOVDQU      off(SI)(R11*1), Y1 \
	VINSERTI64X4 $1, off(R14)(R11*1), Z1, Z1 \
	VMOVDQU      off(SI)(R11*2), Y2 \
	VINSERTI64X4 $1, off(R14)(R11*2), Z2, Z2 \
	VMOVDQU      off(SI)(R15*1), Y3 \
	VINSERTI64X4 $1, off(R14)(R15*1), Z3, Z3 \
	VMOVDQU      off(R13), Y4 \
	VINSERTI64X4 $1, off(R10), Z4, Z4 \
	VMOVDQU      off(R13)(R11*1), Y5 \
	VINSERTI64X4 $1, off(R10)(R11*1), Z5, Z5 \
	VMOVDQU      off(R13)(R11*2), Y6 \
	VINSERTI64X4 $1, off(R10)(R11*2), Z6, Z6 \
	VMOVDQU      off(R13)(R15*1), Y7 \
	VINSERTI64X4 $1, off(R10)(R15*1), Z7, Z7 \
	VPUNPCKLDQ  Z1, Z0, Z8 \
	VPUNPCKHDQ  Z1, Z0, Z9 \
	VPUNPCKLDQ  Z3, Z2, Z10 \
	VPUNPCKHDQ  Z3, Z2, Z11 \
	VPUNPCKLDQ  Z5, Z4, Z12 \
	VPUNPCKHDQ  Z5, Z4, Z13 \
	VPUNPCKLDQ  Z7, Z6, Z14 \
	VPUNPCKHDQ  Z7, Z6, Z15 \
	VPUNPCKLQDQ Z10, Z8, Z0 \
	VPUNPCKHQDQ Z10, Z8, Z1 \
	VPUNPCKLQDQ Z11, Z9, Z2 \
	VPUNPCKHQDQ Z11, Z9, Z3 \
	VPUNPCKLQDQ Z14, Z12, Z4 \
	VPUNPCKHQDQ Z14, Z12, Z5 \
	VPUNPCKLQDQ Z15, Z13, Z6 \
	VPUNPCKHQDQ Z15, Z13, Z7 \
	VSHUFI32X4 $0x88, Z4, Z0, Z8 \
	VSHUFI32X4 $0xdd, Z4, Z0, Z12 \
	VSHUFI32X4 $0x88, Z5, Z1, Z9 \
	VSHUFI32X4 $0xdd, Z5, Z1, Z13 \
	VSHUFI32X4 $0x88, Z6, Z2, Z10 \
	VSHUFI32X4 $0xdd, Z6, Z2, Z14 \
	VSHUFI32X4 $0x88, Z7, Z3, Z11 \
	VSHUFI32X4 $0xdd, Z7, Z3, Z15

// R16DOT8 adds to acc the products of weights Z8..Z15 with the token's
// activation dwords at (R13); R16DOT8HI those of Z0..Z7 with the next 32
// bytes (Q4_K's second sub-block).
#define R16DOT8(acc) \
	VPDPBUSD.BCST   (R13), Z8, acc \
	VPDPBUSD.BCST   4(R13), Z9, acc \
	VPDPBUSD.BCST   8(R13), Z10, acc \
	VPDPBUSD.BCST   12(R13), Z11, acc \
	VPDPBUSD.BCST   16(R13), Z12, acc \
	VPDPBUSD.BCST   20(R13), Z13, acc \
	VPDPBUSD.BCST   24(R13), Z14, acc \
	VPDPBUSD.BCST   28(R13), Z15, acc

#define R16DOT8HI(acc) \
	VPDPBUSD.BCST   32(R13), Z0, acc \
	VPDPBUSD.BCST   36(R13), Z1, acc \
	VPDPBUSD.BCST   40(R13), Z2, acc \
	VPDPBUSD.BCST   44(R13), Z3, acc \
	VPDPBUSD.BCST   48(R13), Z4, acc \
	VPDPBUSD.BCST   52(R13), Z5, acc \
	VPDPBUSD.BCST   56(R13), Z6, acc \
	VPDPBUSD.BCST   60(R13), Z7, acc

// R16TOKSTART points R13, R14, R10 and AX at the first token's
// activations, scales, negated sums and accumulator, R12 at the count.
#define R16TOKSTART \
	MOVQ DI, R13 \
	MOVQ DX, R14 \
	MOVQ R8, R10 \
	MOVQ acc+72(FP), AX \
	MOVQ ntok+64(FP), R12

// R16DOTS adds the block's integers (weights in Z8..Z15, started in Z21)
// times its scales (Z20 times the token's) to the accumulator, in Z21.
#define R16DOTS \
	R16DOT8(Z21) \
	VCVTDQ2PS       Z21, Z21 \
	VMULPS.BCST     (R14), Z20, Z22 \
	VMULPS          Z22, Z21, Z21 \
	VADDPS          (AX), Z21, Z21

// R16MIN adds the mins' part (Z23 times the token's scale, times its
// activations' sum: minus that of their negated sum) to Z21.
#define R16MIN \
	VPBROADCASTD    (R10), Z24 \
	VCVTDQ2PS       Z24, Z24 \
	VMULPS.BCST     (R14), Z23, Z22 \
	VMULPS          Z22, Z24, Z24 \
	VSUBPS          Z24, Z21, Z21

// R16NEXT stores Z21 and steps to the next token.
#define R16NEXT \
	VMOVUPS Z21, (AX) \
	ADDQ BX, R13 \
	ADDQ R9, R14 \
	ADDQ R9, R10 \
	ADDQ $64, AX \
	DECQ R12

// R16TOKENS adds the block into every token's accumulator, the weights'
// offset 2^sh.
#define R16TOKENS(sh) \
	R16TOKSTART \
tok_loop: \
	VPBROADCASTD    (R10), Z21 \
	VPSLLD          $sh, Z21, Z21 \
	R16DOTS \
	R16NEXT \
	JNZ  tok_loop

// R16TOKENSMIN is R16TOKENS for unsigned weights with a min.
#define R16TOKENSMIN \
	R16TOKSTART \
tok_loop: \
	VPXORD          Z21, Z21, Z21 \
	R16DOTS \
	R16MIN \
	R16NEXT \
	JNZ  tok_loop

// R16PF prefetches the next group of rows, step bytes (sixteen blocks) a
// block: sixteen rows' streams are more than the hardware prefetcher
// follows.
#define R16PF(step) \
	MOVQ pf-8(SP), AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	PREFETCHT0 256(AX) \
	PREFETCHT0 320(AX) \
	ADDQ $step, AX \
	MOVQ AX, pf-8(SP)

// R16NIBBLES loads sixteen rows' 16 bytes of nibbles at off and leaves,
// for v in 0..7, the values meeting activation bytes 4v..4v+3 in Z(8+v):
// the rows are transposed 4x4 per 128-bit lane (Z(k) = rows k, k+4, k+8,
// k+12), low nibbles are values 0-15, high ones 16-31. Z16: 0x0f bytes.
#define R16NIBBLES(off) \
	R16BASES \
	VMOVDQU      off(SI), X0 \
	VINSERTI32X4 $1, off(R13), Z0, Z0 \
	VINSERTI32X4 $2, off(R14), Z0, Z0 \
	VINSERTI32X4 $3, off(R10), Z0, Z0 \
	VMOVDQU      off(SI)(R11*1), X1 \
	VINSERTI32X4 $1, off(R13)(R11*1), Z1, Z1 \
	VINSERTI32X4 $2, off(R14)(R11*1), Z1, Z1 \
	VINSERTI32X4 $3, off(R10)(R11*1), Z1, Z1 \
	VMOVDQU      off(SI)(R11*2), X2 \
	VINSERTI32X4 $1, off(R13)(R11*2), Z2, Z2 \
	VINSERTI32X4 $2, off(R14)(R11*2), Z2, Z2 \
	VINSERTI32X4 $3, off(R10)(R11*2), Z2, Z2 \
	VMOVDQU      off(SI)(R15*1), X3 \
	VINSERTI32X4 $1, off(R13)(R15*1), Z3, Z3 \
	VINSERTI32X4 $2, off(R14)(R15*1), Z3, Z3 \
	VINSERTI32X4 $3, off(R10)(R15*1), Z3, Z3 \
	VPUNPCKLDQ  Z1, Z0, Z8 \
	VPUNPCKHDQ  Z1, Z0, Z9 \
	VPUNPCKLDQ  Z3, Z2, Z10 \
	VPUNPCKHDQ  Z3, Z2, Z11 \
	VPUNPCKLQDQ Z10, Z8, Z4 \
	VPUNPCKHQDQ Z10, Z8, Z5 \
	VPUNPCKLQDQ Z11, Z9, Z6 \
	VPUNPCKHQDQ Z11, Z9, Z7 \
	VPSRLD $4, Z4, Z12 \
	VPSRLD $4, Z5, Z13 \
	VPSRLD $4, Z6, Z14 \
	VPSRLD $4, Z7, Z15 \
	VPANDD Z16, Z4, Z8 \
	VPANDD Z16, Z5, Z9 \
	VPANDD Z16, Z6, Z10 \
	VPANDD Z16, Z7, Z11 \
	VPANDD Z16, Z12, Z12 \
	VPANDD Z16, Z13, Z13 \
	VPANDD Z16, Z14, Z14 \
	VPANDD Z16, Z15, Z15

// R16FIFTH ORs each value's fifth bit into Z(8+v): bit e of the rows' qh
// (gathered at off) for value e, spread to bit 4 of its byte by a
// multiply (Z25: 0x0f, Z26: 0x02040810, Z27: 0x10 bytes).
#define R16FIFTH(off) \
	KXNORW K3, K3, K3 \
	VPGATHERDD off(SI)(Z17*1), K3, Z24 \
	R16BIT(0, Z24, Z8) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(1, Z24, Z9) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(2, Z24, Z10) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(3, Z24, Z11) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(4, Z24, Z12) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(5, Z24, Z13) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(6, Z24, Z14) \
	VPSRLD $4, Z24, Z24 \
	R16BIT(7, Z24, Z15)

#define R16BIT(v, h, z) \
	VPANDD  Z25, h, Z0 \
	VPMULLD Z26, Z0, Z0 \
	VPANDD  Z27, Z0, Z0 \
	VPORD   Z0, z, z

// R16FIFTHSETUP loads R16FIFTH's constants.
#define R16FIFTHSETUP \
	MOVL $0x0f, AX \
	VPBROADCASTD AX, Z25 \
	MOVL $0x02040810, AX \
	VPBROADCASTD AX, Z26 \
	MOVL $0x10101010, AX \
	VPBROADCASTD AX, Z27

// R16SCALESMIN gathers the rows' fp16 scale and min (the dword at SI)
// into Z20 and Z23, as floats.
#define R16SCALESMIN \
	KXNORW K2, K2, K2 \
	VPGATHERDD (SI)(Z17*1), K2, Z23 \
	VPMOVDW    Z23, Y20 \
	VCVTPH2PS  Y20, Z20 \
	VPSRLD     $16, Z23, Z23 \
	VPMOVDW    Z23, Y23 \
	VCVTPH2PS  Y23, Z23

// R16STEP moves to the next block (size bytes a row).
#define R16STEP(size) \
	ADDQ $size, SI \
	ADDQ $32, DI \
	ADDQ $4, DX \
	ADDQ $4, R8 \
	DECQ CX

// R16OUT stores each token's sixteen results in row order (Z18 undoes
// the lane order).
#define R16OUT \
	MOVQ acc+72(FP), AX \
	MOVQ out+80(FP), DI \
	MOVQ ostride+88(FP), BX \
	SHLQ $2, BX \
	MOVQ ntok+64(FP), R12 \
out_loop: \
	VPERMPS (AX), Z18, Z21 \
	VMOVUPS Z21, (DI) \
	ADDQ $64, AX \
	ADDQ BX, DI \
	DECQ R12 \
	JNZ  out_loop \
	VZEROUPPER \
	RET

// Q4KSCLO(j, b0, b4, zs, zm): sub-block j < 4's scale and min, from the
// rows' scale bytes 0-3 (b0) and 4-7 (b4).
#define Q4KSCLO(j, b0, b4, zs, zm) \
	VPSRLD $(8*j), b0, zs \
	VPANDD.BCST r16c63<>(SB), zs, zs \
	VPSRLD $(8*j), b4, zm \
	VPANDD.BCST r16c63<>(SB), zm, zm

// Q4KSCHI(i, b0, b4, b8, t, zs, zm): sub-block 4+i's, from bytes 8-11
// (b8) and the top two bits of bytes i and 4+i; t a temporary.
#define Q4KSCHI(i, b0, b4, b8, t, zs, zm) \
	VPSRLD $(8*i), b8, zs \
	VPANDD.BCST r16c15<>(SB), zs, zs \
	VPSRLD $(8*i+6), b0, t \
	VPANDD.BCST r16c3<>(SB), t, t \
	VPSLLD $4, t, t \
	VPORD  t, zs, zs \
	VPSRLD $(8*i+4), b8, zm \
	VPANDD.BCST r16c15<>(SB), zm, zm \
	VPSRLD $(8*i+6), b4, t \
	VPANDD.BCST r16c3<>(SB), t, t \
	VPSLLD $4, t, t \
	VPORD  t, zm, zm

// KNIBBLES(off) loads sixteen rows' 32 bytes of nibbles at off as two
// sub-blocks: low nibbles in Z8..Z15, high ones in Z0..Z7 (Z16: 0x0f).
#define KNIBBLES(off) \
	R16LOAD32(off) \
	VPSRLD $4, Z8, Z0 \
	VPSRLD $4, Z9, Z1 \
	VPSRLD $4, Z10, Z2 \
	VPSRLD $4, Z11, Z3 \
	VPSRLD $4, Z12, Z4 \
	VPSRLD $4, Z13, Z5 \
	VPSRLD $4, Z14, Z6 \
	VPSRLD $4, Z15, Z7 \
	VPANDD Z16, Z8, Z8 \
	VPANDD Z16, Z9, Z9 \
	VPANDD Z16, Z10, Z10 \
	VPANDD Z16, Z11, Z11 \
	VPANDD Z16, Z12, Z12 \
	VPANDD Z16, Z13, Z13 \
	VPANDD Z16, Z14, Z14 \
	VPANDD Z16, Z15, Z15 \
	VPANDD Z16, Z0, Z0 \
	VPANDD Z16, Z1, Z1 \
	VPANDD Z16, Z2, Z2 \
	VPANDD Z16, Z3, Z3 \
	VPANDD Z16, Z4, Z4 \
	VPANDD Z16, Z5, Z5 \
	VPANDD Z16, Z6, Z6 \
	VPANDD Z16, Z7, Z7

// KTOKENS(p, lbl, s0, s1, m0, m1) adds chunk p (sub-blocks 2p in Z8..Z15
// and 2p+1 in Z0..Z7, their scales s0, s1 and mins m0, m1) into every
// token's S and M.
#define KTOKENS(p, lbl, s0, s1, m0, m1) \
	LEAQ (64*p)(DI), R13 \
	LEAQ (8*p)(R8), R10 \
	MOVQ ntok+64(FP), R12 \
	MOVQ R12, AX \
	SHLQ $6, AX \
	ADDQ acc+72(FP), AX \
lbl: \
	VPXORD          Z21, Z21, Z21 \
	R16DOT8(Z21) \
	VPMULLD         s0, Z21, Z21 \
	VPXORD          Z22, Z22, Z22 \
	R16DOT8HI(Z22) \
	VPMULLD         s1, Z22, Z22 \
	VPADDD          Z22, Z21, Z21 \
	VPADDD          (AX), Z21, Z21 \
	VMOVDQU32       Z21, (AX) \
	VPBROADCASTD    (R10), Z21 \
	VPMULLD         m0, Z21, Z21 \
	VPBROADCASTD    4(R10), Z22 \
	VPMULLD         m1, Z22, Z22 \
	VPADDD          Z22, Z21, Z21 \
	VPADDD          64(AX), Z21, Z21 \
	VMOVDQU32       Z21, 64(AX) \
	ADDQ BX, R13 \
	LEAQ (R10)(R9*8), R10 \
	SUBQ $-128, AX \
	DECQ R12 \
	JNZ  lbl

// Q4KCHUNK(p, lbl): Q4_K's chunk p (scales and mins in Z24/Z25, Z26/Z27).
#define Q4KCHUNK(p, lbl) \
	R16PF9(576) \
	KNIBBLES(16+32*p) \
	KTOKENS(p, lbl, Z24, Z25, Z26, Z27)

// Q5KFIFTH(r, zh, z): ORs bit 4 of zh rotated left by r into z's bytes
// (VPTERNLOGD 0xF8: dest | B & C).
#define Q5KFIFTH(r, zh, z) \
	VPROLD $r, zh, Z21 \
	VPTERNLOGD.BCST $0xF8, r16c10<>(SB), Z21, z

// Q5KCHUNK(p, lbl, rl, rh): Q5_K's chunk p, its fifth bits (2p for the
// low nibbles, 2p+1 for the high) from qh in Z18, Z19, Z20, Z23, Z24..Z27
// rotated to bit 4 by rl and rh; scales and mins in Z28/Z29, Z30/Z31.
#define Q5KCHUNK(p, lbl, rl, rh) \
	R16PF7(352) \
	R16PF7(352) \
	KNIBBLES(48+32*p) \
	Q5KFIFTH(rl, Z18, Z8) \
	Q5KFIFTH(rl, Z19, Z9) \
	Q5KFIFTH(rl, Z20, Z10) \
	Q5KFIFTH(rl, Z23, Z11) \
	Q5KFIFTH(rl, Z24, Z12) \
	Q5KFIFTH(rl, Z25, Z13) \
	Q5KFIFTH(rl, Z26, Z14) \
	Q5KFIFTH(rl, Z27, Z15) \
	Q5KFIFTH(rh, Z18, Z0) \
	Q5KFIFTH(rh, Z19, Z1) \
	Q5KFIFTH(rh, Z20, Z2) \
	Q5KFIFTH(rh, Z23, Z3) \
	Q5KFIFTH(rh, Z24, Z4) \
	Q5KFIFTH(rh, Z25, Z5) \
	Q5KFIFTH(rh, Z26, Z6) \
	Q5KFIFTH(rh, Z27, Z7) \
	KTOKENS(p, lbl, Z28, Z29, Z30, Z31)

// KSCALEBYTES gathers the rows' scale bytes 0-3, 4-7 and 8-11 into Z0,
// Z1 and Z2.
#define KSCALEBYTES \
	KXNORW K3, K3, K3 \
	VPGATHERDD 4(SI)(Z17*1), K3, Z0 \
	KXNORW K3, K3, K3 \
	VPGATHERDD 8(SI)(Z17*1), K3, Z1 \
	KXNORW K3, K3, K3 \
	VPGATHERDD 12(SI)(Z17*1), K3, Z2

// R16PF9 is R16PF over nine lines.
#define R16PF9(step) \
	MOVQ pf-8(SP), AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	PREFETCHT0 256(AX) \
	PREFETCHT0 320(AX) \
	PREFETCHT0 384(AX) \
	PREFETCHT0 448(AX) \
	PREFETCHT0 512(AX) \
	ADDQ $step, AX \
	MOVQ AX, pf-8(SP)

// R16GRID maps the nibbles in Z8..Z15 through the grid in Z28 (IQ4_NL's
// and IQ4_XS's values plus 128, per 128-bit lane).
#define R16GRID \
	VPSHUFB Z8, Z28, Z8 \
	VPSHUFB Z9, Z28, Z9 \
	VPSHUFB Z10, Z28, Z10 \
	VPSHUFB Z11, Z28, Z11 \
	VPSHUFB Z12, Z28, Z12 \
	VPSHUFB Z13, Z28, Z13 \
	VPSHUFB Z14, Z28, Z14 \
	VPSHUFB Z15, Z28, Z15

// R16PF7 is R16PF over seven lines.
#define R16PF7(step) \
	MOVQ pf-8(SP), AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	PREFETCHT0 256(AX) \
	PREFETCHT0 320(AX) \
	PREFETCHT0 384(AX) \
	ADDQ $step, AX \
	MOVQ AX, pf-8(SP)

// Q6KHI(v, q): chunk q's high values for dword v into Z(v), from its ql
// (Z(8+v)) and qh (Z(24+v)) bits 4+2q and 5+2q: (ql >> 4) & 0x0f |
// (qh >> 2q) & 0x30 (VPTERNLOGD 0xEC: dest & C | B).
#define Q6KHI(v, q, zl, zh, zo) \
	VPSRLD $4, zl, zo \
	VPSRLD $(2*q), zh, Z18 \
	VPANDD.BCST r16c30<>(SB), Z18, Z18 \
	VPTERNLOGD.BCST $0xEC, r16c0f<>(SB), Z18, zo

// Q6KLO(q): chunk q's low values for the same dword, in place: ql & 0x0f |
// (qh << (4-2q)) & 0x30.
#define Q6KLO(q, zl, zh) \
	VPSLLD $(4-2*q), zh, Z18 \
	VPANDD.BCST r16c30<>(SB), Z18, Z18 \
	VPTERNLOGD.BCST $0xEC, r16c0f<>(SB), Z18, zl

#define Q6KV(v, q, zl, zh, zo) \
	Q6KHI(v, q, zl, zh, zo) \
	Q6KLO(q, zl, zh)

// Q6KSUB(j, w0, w1, w2, w3, off, sc) adds sub-block j's part to Z18 (first
// in Z18, others through Z19): (its values times the token's 16 bytes at
// off(R13), started at -32 times their sum) times its scale.
#define Q6KSUB(j, w0, w1, w2, w3, off, sc, z) \
	VPBROADCASTW    (2*(j))(R10), z \
	VPMADDWD        Z16, z, z \
	VPDPBUSD.BCST   off(R13), w0, z \
	VPDPBUSD.BCST   (off+4)(R13), w1, z \
	VPDPBUSD.BCST   (off+8)(R13), w2, z \
	VPDPBUSD.BCST   (off+12)(R13), w3, z \
	VPMULLD         sc, z, z

// Q6KSCALE(k, src, dst): dst = the sign-extended byte k of src's dwords.
#define Q6KSCALE(k, src, dst) \
	VPSLLD $(24-8*(k)), src, dst \
	VPSRAD $24, dst, dst

// Q6KCHUNK(h, q, lbl): ql bytes 64h+32q.. of the sixteen rows (with the
// half's qh in Z24..Z31) as sub-blocks j = 8h+2q, j+1 (low nibbles) and
// j+4, j+5 (high), added into every token's S.
#define Q6KCHUNK(h, q, lbl) \
	R16PF7(420) \
	R16PF7(420) \
	R16LOAD32(64*h+32*q) \
	Q6KV(0, q, Z8, Z24, Z0) \
	Q6KV(1, q, Z9, Z25, Z1) \
	Q6KV(2, q, Z10, Z26, Z2) \
	Q6KV(3, q, Z11, Z27, Z3) \
	Q6KV(4, q, Z12, Z28, Z4) \
	Q6KV(5, q, Z13, Z29, Z5) \
	Q6KV(6, q, Z14, Z30, Z6) \
	Q6KV(7, q, Z15, Z31, Z7) \
	KXNORW K2, K2, K2 \
	VPGATHERDD (192+8*h)(SI)(Z17*1), K2, Z21 \
	KXNORW K2, K2, K2 \
	VPGATHERDD (196+8*h)(SI)(Z17*1), K2, Z23 \
	Q6KSCALE(2*q, Z21, Z20) \
	Q6KSCALE(2*q+1, Z21, Z21) \
	Q6KSCALE(2*q, Z23, Z22) \
	Q6KSCALE(2*q+1, Z23, Z23) \
	LEAQ (128*h+32*q)(DI), R13 \
	MOVQ R8, R10 \
	MOVQ ntok+64(FP), R12 \
	MOVQ R12, AX \
	SHLQ $6, AX \
	ADDQ acc+72(FP), AX \
lbl: \
	Q6KSUB(8*h+2*q, Z8, Z9, Z10, Z11, 0, Z20, Z18) \
	Q6KSUB(8*h+2*q+1, Z12, Z13, Z14, Z15, 16, Z21, Z19) \
	VPADDD          Z19, Z18, Z18 \
	Q6KSUB(8*h+2*q+4, Z0, Z1, Z2, Z3, 64, Z22, Z19) \
	VPADDD          Z19, Z18, Z18 \
	Q6KSUB(8*h+2*q+5, Z4, Z5, Z6, Z7, 80, Z23, Z19) \
	VPADDD          Z19, Z18, Z18 \
	VPADDD          (AX), Z18, Z18 \
	VMOVDQU32       Z18, (AX) \
	ADDQ BX, R13 \
	LEAQ (R10)(R9*8), R10 \
	ADDQ $64, AX \
	DECQ R12 \
	JNZ  lbl

// Q6KHALF(h, ...): the half's qh (bytes 128+32h) into Z24..Z31, then its
// two chunks.
#define Q6KHALF(h, l0, l1) \
	R16LOAD32(128+32*h) \
	VMOVDQA64 Z8, Z24 \
	VMOVDQA64 Z9, Z25 \
	VMOVDQA64 Z10, Z26 \
	VMOVDQA64 Z11, Z27 \
	VMOVDQA64 Z12, Z28 \
	VMOVDQA64 Z13, Z29 \
	VMOVDQA64 Z14, Z30 \
	VMOVDQA64 Z15, Z31 \
	Q6KCHUNK(h, 0, l0) \
	Q6KCHUNK(h, 1, l1)

// KZERO(lbl) zeroes Q4_K's and Q5_K's S and M (acc's second and third
// parts, 32 words a token).
#define KZERO(lbl) \
	MOVQ ntok+64(FP), R12 \
	MOVQ acc+72(FP), R13 \
	MOVQ R12, AX \
	SHLQ $6, AX \
	ADDQ AX, R13 \
lbl: \
	VMOVDQU32 Z19, (R13) \
	VMOVDQU32 Z19, 64(R13) \
	SUBQ $-128, R13 \
	DECQ R12 \
	JNZ  lbl

// KFLOAT(lbl) is Q4_K's and Q5_K's float steps at the end of a
// super-block (d in Z20, dmin in Z23, Z19 zero): acc = acc + (d_a d) S,
// then + (d_a dmin) M; S and M cleared for the next.
#define KFLOAT(lbl) \
	MOVQ DX, R14 \
	MOVQ acc+72(FP), AX \
	MOVQ ntok+64(FP), R12 \
	MOVQ R12, R13 \
	SHLQ $6, R13 \
	ADDQ AX, R13 \
lbl: \
	VCVTDQ2PS   (R13), Z21 \
	VMULPS.BCST (R14), Z20, Z22 \
	VMULPS      Z22, Z21, Z21 \
	VADDPS      (AX), Z21, Z21 \
	VCVTDQ2PS   64(R13), Z24 \
	VMULPS.BCST (R14), Z23, Z22 \
	VMULPS      Z22, Z24, Z24 \
	VADDPS      Z24, Z21, Z21 \
	VMOVUPS     Z21, (AX) \
	VMOVDQU32   Z19, (R13) \
	VMOVDQU32   Z19, 64(R13) \
	ADDQ R9, R14 \
	ADDQ $64, AX \
	SUBQ $-128, R13 \
	DECQ R12 \
	JNZ  lbl
