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

// R16SCALESE8 gathers the sixteen rows' E8M0 scale bytes into Z20 as the
// floats 2^(e-128) (ggml_e8m0_to_fp32_half): the bits (e-1)<<23, or
// 0x00200000<<e below 2 (Z24: 0xff, Z25: 1, Z26: 2, Z27: 0x00200000).
#define R16SCALESE8 \
	KXNORW K2, K2, K2 \
	VPGATHERDD (SI)(Z17*1), K2, Z20 \
	VPANDD     Z24, Z20, Z20 \
	R16E8

// R16E8 turns the E8M0 exponents in Z20's dwords into R16SCALESE8's floats.
#define R16E8 \
	VPCMPUD    $1, Z26, Z20, K3 \
	VPSUBD     Z25, Z20, Z23 \
	VPSLLD     $23, Z23, Z23 \
	VPSLLVD    Z20, Z27, K3, Z23 \
	VMOVDQA32  Z23, Z20

// R16E8SETUP loads the constants of R16SCALESE8 and of MXFP4's nibbles
// (Z16: 0x0f bytes, Z28: mxfp4u8).
#define R16E8SETUP \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z16 \
	VBROADCASTI32X4 ·mxfp4u8(SB), Z28 \
	MOVL $0xff, AX \
	VPBROADCASTD AX, Z24 \
	MOVL $1, AX \
	VPBROADCASTD AX, Z25 \
	MOVL $2, AX \
	VPBROADCASTD AX, Z26 \
	MOVL $0x00200000, AX \
	VPBROADCASTD AX, Z27

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

// R16PF6 prefetches six lines at pf-8(SP), left in AX.
#define R16PF6 \
	MOVQ pf-8(SP), AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 192(AX) \
	PREFETCHT0 256(AX) \
	PREFETCHT0 320(AX)

// R16PF prefetches the next group of rows, step bytes (sixteen blocks) a
// block: sixteen rows' streams are more than the hardware prefetcher
// follows.
#define R16PF(step) \
	R16PF6 \
	ADDQ $step, AX \
	MOVQ AX, pf-8(SP)

// R16LOAD16 loads sixteen rows' 16 bytes at off and leaves dword k of
// every row in Z(4+k), rows in order (Z(k) = rows k, k+4, k+8, k+12, each
// 128-bit lane transposed 4x4).
#define R16LOAD16(off) \
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
	VPUNPCKHQDQ Z11, Z9, Z7

// R16NIBBLES loads sixteen rows' 16 bytes of nibbles at off and leaves,
// for v in 0..7, the values meeting activation bytes 4v..4v+3 in Z(8+v):
// the rows are transposed 4x4 per 128-bit lane (Z(k) = rows k, k+4, k+8,
// k+12), low nibbles are values 0-15, high ones 16-31. Z16: 0x0f bytes.
#define R16NIBBLES(off) \
	R16LOAD16(off) \
	R16SPLIT

// R16SPLIT splits the nibble bytes in Z4..Z7 into Z8..Z15 (R16NIBBLES).
#define R16SPLIT \
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

// R16PF9 is R16PF over nine lines.
#define R16PF9(step) \
	R16PF6 \
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
	R16PF6 \
	PREFETCHT0 384(AX) \
	ADDQ $step, AX \
	MOVQ AX, pf-8(SP)

// R16PACKED16 reads a packed block of fp16 scales and four nibble vectors
// (packQ40): scales in Z20 as floats, values split into Z8..Z15. It
// prefetches a group ahead, as the gather kernels do (four blocks ahead:
// 10-15% slower at batch 1).
#define R16PACKED16 \
	R16PF(288) \
	VCVTPH2PS (SI), Z20 \
	VMOVDQU32 32(SI), Z4 \
	VMOVDQU32 96(SI), Z5 \
	VMOVDQU32 160(SI), Z6 \
	VMOVDQU32 224(SI), Z7 \
	R16SPLIT
