// Macros of the K-quant row kernels (int8rowsk_amd64.s); the shared ones
// are in int8rows_amd64.h.

// KHOLD32(off) is R16LOAD32(off) with the dwords left in Z24..Z31, held
// while other bytes are loaded.
#define KHOLD32(off) \
	R16LOAD32(off) \
	VMOVDQA64 Z8, Z24 \
	VMOVDQA64 Z9, Z25 \
	VMOVDQA64 Z10, Z26 \
	VMOVDQA64 Z11, Z27 \
	VMOVDQA64 Z12, Z28 \
	VMOVDQA64 Z13, Z29 \
	VMOVDQA64 Z14, Z30 \
	VMOVDQA64 Z15, Z31

// KSTOKS starts a token loop over acc's second part (the exact integer
// sums): R12 the tokens, AX token 0's sums.
#define KSTOKS \
	MOVQ ntok+64(FP), R12 \
	MOVQ R12, AX \
	SHLQ $6, AX \
	ADDQ acc+72(FP), AX

// KSACC starts a token loop over both parts: AX the float accumulators,
// R13 the sums, R12 the tokens.
#define KSACC \
	MOVQ acc+72(FP), AX \
	MOVQ ntok+64(FP), R12 \
	MOVQ R12, R13 \
	SHLQ $6, R13 \
	ADDQ AX, R13

// Q4KSCLO(j, b0, b4, zs, zm): sub-block j < 4's scale and min, from the
// rows' scale bytes 0-3 (b0) and 4-7 (b4).
#define Q4KSCLO(j, b0, b4, zs, zm) \
	VPSRLD $(8*j), b0, zs \
	VPANDD.BCST ·r16c63(SB), zs, zs \
	VPSRLD $(8*j), b4, zm \
	VPANDD.BCST ·r16c63(SB), zm, zm

// Q4KSCHI(i, b0, b4, b8, t, zs, zm): sub-block 4+i's, from bytes 8-11
// (b8) and the top two bits of bytes i and 4+i; t a temporary.
#define Q4KSCHI(i, b0, b4, b8, t, zs, zm) \
	VPSRLD $(8*i), b8, zs \
	VPANDD.BCST ·r16c15(SB), zs, zs \
	VPSRLD $(8*i+6), b0, t \
	VPANDD.BCST ·r16c3(SB), t, t \
	VPSLLD $4, t, t \
	VPORD  t, zs, zs \
	VPSRLD $(8*i+4), b8, zm \
	VPANDD.BCST ·r16c15(SB), zm, zm \
	VPSRLD $(8*i+6), b4, t \
	VPANDD.BCST ·r16c3(SB), t, t \
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
	KSTOKS \
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
	VPTERNLOGD.BCST $0xF8, ·r16c10(SB), Z21, z

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

// KSCALEBYTES loads Q4_K's and Q5_K's scale bytes 0-3, 4-7 and 8-11 into
// Z0, Z1 and Z2 (KSC16's copy of block bytes 4-15).
#define KSCALEBYTES \
	VMOVDQU64 64(SP), Z0 \
	VMOVDQU64 128(SP), Z1 \
	VMOVDQU64 192(SP), Z2

// KDMIN loads Q4_K's and Q5_K's d and dmin (KSC16's copy of bytes 0-3)
// into Z20 and Z23, as floats.
#define KDMIN \
	VMOVDQU64  (SP), Z23 \
	VPMOVDW    Z23, Y20 \
	VCVTPH2PS  Y20, Z20 \
	VPSRLD     $16, Z23, Z23 \
	VPMOVDW    Z23, Y23 \
	VCVTPH2PS  Y23, Z23

// KSC16(off, zi) copies the sixteen rows' 16 bytes at off (a super-block's
// scales) to the frame, dword k of every row at 64k(SP) in R16LOAD32's
// lane order: one transposition where gathers would cost sixteen loads a
// dword. zi: a free register.
#define KSC16(off, zi) \
	R16LOAD16(off) \
	VMOVDQU32 ·r16perm(SB), zi \
	VPERMD    Z4, zi, Z4 \
	VPERMD    Z5, zi, Z5 \
	VPERMD    Z6, zi, Z6 \
	VPERMD    Z7, zi, Z7 \
	VMOVDQU64 Z4, (SP) \
	VMOVDQU64 Z5, 64(SP) \
	VMOVDQU64 Z6, 128(SP) \
	VMOVDQU64 Z7, 192(SP)

// Q6KHI(v, q): chunk q's high values for dword v into Z(v), from its ql
// (Z(8+v)) and qh (Z(24+v)) bits 4+2q and 5+2q: (ql >> 4) & 0x0f |
// (qh >> 2q) & 0x30 (VPTERNLOGD 0xEC: dest & C | B).
#define Q6KHI(v, q, zl, zh, zo) \
	VPSRLD $4, zl, zo \
	VPSRLD $(2*q), zh, Z18 \
	VPANDD.BCST ·r16c30(SB), Z18, Z18 \
	VPTERNLOGD.BCST $0xEC, ·r16c0f(SB), Z18, zo

// Q6KLO(q): chunk q's low values for the same dword, in place: ql & 0x0f |
// (qh << (4-2q)) & 0x30.
#define Q6KLO(q, zl, zh) \
	VPSLLD $(4-2*q), zh, Z18 \
	VPANDD.BCST ·r16c30(SB), Z18, Z18 \
	VPTERNLOGD.BCST $0xEC, ·r16c0f(SB), Z18, zl

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
	VMOVDQU64 (128*h)(SP), Z21 \
	VMOVDQU64 (128*h+64)(SP), Z23 \
	Q6KSCALE(2*q, Z21, Z20) \
	Q6KSCALE(2*q+1, Z21, Z21) \
	Q6KSCALE(2*q, Z23, Z22) \
	Q6KSCALE(2*q+1, Z23, Z23) \
	LEAQ (128*h+32*q)(DI), R13 \
	MOVQ R8, R10 \
	KSTOKS \
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
	KHOLD32(128+32*h) \
	Q6KCHUNK(h, 0, l0) \
	Q6KCHUNK(h, 1, l1)

// KSETUP(lbl) starts Q4_K's and Q5_K's kernels: R16SETUP, S and M zeroed
// (KZERO), Z16 the 0x0f mask.
#define KSETUP(lbl) \
	R16SETUP(·r16perm(SB)) \
	KZERO(lbl) \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z16

// KZERO(lbl) zeroes Q4_K's and Q5_K's S and M (acc's second and third
// parts, 32 words a token).
#define KZERO(lbl) \
	KSACC \
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
	KSACC \
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

// SZERO(lbl) zeroes Q6_K's, Q3_K's and Q2_K's S (acc's second part, 16
// words a token).
#define SZERO(lbl) \
	KSACC \
lbl: \
	VMOVDQU32 Z19, (R13) \
	ADDQ $64, R13 \
	DECQ R12 \
	JNZ  lbl

// SFLOAT(off, lbl) is Q6_K's and Q3_K's float step at the end of a
// super-block, d the fp16 in the high half of the dword at off: acc =
// acc + (d_a d) S, and S cleared.
#define SFLOAT(off, lbl) \
	KXNORW K2, K2, K2 \
	VPGATHERDD off(SI)(Z17*1), K2, Z20 \
	VPSRLD     $16, Z20, Z20 \
	VPMOVDW    Z20, Y20 \
	VCVTPH2PS  Y20, Z20 \
	VPXORD     Z19, Z19, Z19 \
	MOVQ DX, R14 \
	KSACC \
lbl: \
	VCVTDQ2PS   (R13), Z21 \
	VMULPS.BCST (R14), Z20, Z22 \
	VMULPS      Z22, Z21, Z21 \
	VADDPS      (AX), Z21, Z21 \
	VMOVUPS     Z21, (AX) \
	VMOVDQU32   Z19, (R13) \
	ADDQ R9, R14 \
	ADDQ $64, AX \
	ADDQ $64, R13 \
	DECQ R12 \
	JNZ  lbl

// Q3KV(sh, r, zq, zh, zo): a value dword of Q3_K's shift: (zq >> sh) & 3,
// with zh rotated left by r ORed in at bit 2 (VPTERNLOGD 0xF8: dest | B & C).
#define Q3KV(sh, r, zq, zh, zo) \
	VPSRLD $sh, zq, zo \
	VPANDD.BCST ·r16c03(SB), zo, zo \
	VPROLD $r, zh, Z21 \
	VPTERNLOGD.BCST $0xF8, ·r16c04(SB), Z21, zo

// Q3KSC(lo, sl, sh, dst): a group's scale less 32 from its low nibble
// (lo >> sl) and high bits (Z19 >> sh).
#define Q3KSC(lo, sl, sh, dst) \
	VPSRLD $sl, lo, dst \
	VPANDD.BCST ·r16c15(SB), dst, dst \
	VPSRLD $sh, Z19, Z22 \
	VPANDD.BCST ·r16c3(SB), Z22, Z22 \
	VPSLLD $4, Z22, Z22 \
	VPORD  Z22, dst, dst \
	VPSUBD.BCST ·r16c32(SB), dst, dst

// Q3KSHIFT(h, s, r, lo, sl0, sh0, sl1, sh1, lbl): half h's shift s (qs
// bytes in Z8..Z15, hmask in Z24..Z31 rotated by r to bit 2), its groups'
// scales from lo (Z16 or Z18) at sl0/sh0 and sl1/sh1, into every token's S.
#define Q3KSHIFT(h, s, r, lo, sl0, sh0, sl1, sh1, lbl) \
	R16PF(220) \
	Q3KV(2*s, r, Z8, Z24, Z0) \
	Q3KV(2*s, r, Z9, Z25, Z1) \
	Q3KV(2*s, r, Z10, Z26, Z2) \
	Q3KV(2*s, r, Z11, Z27, Z3) \
	Q3KV(2*s, r, Z12, Z28, Z4) \
	Q3KV(2*s, r, Z13, Z29, Z5) \
	Q3KV(2*s, r, Z14, Z30, Z6) \
	Q3KV(2*s, r, Z15, Z31, Z7) \
	Q3KSC(lo, sl0, sh0, Z20) \
	Q3KSC(lo, sl1, sh1, Z23) \
	LEAQ (128*h+32*s)(DI), R13 \
	MOVQ R8, R10 \
	KSTOKS \
lbl: \
	VPBROADCASTW    (2*(8*h+2*s))(R10), Z21 \
	VPMADDWD        ·r16cm4(SB), Z21, Z21 \
	VPDPBUSD.BCST   (R13), Z0, Z21 \
	VPDPBUSD.BCST   4(R13), Z1, Z21 \
	VPDPBUSD.BCST   8(R13), Z2, Z21 \
	VPDPBUSD.BCST   12(R13), Z3, Z21 \
	VPMULLD         Z20, Z21, Z21 \
	VPBROADCASTW    (2*(8*h+2*s)+2)(R10), Z22 \
	VPMADDWD        ·r16cm4(SB), Z22, Z22 \
	VPDPBUSD.BCST   16(R13), Z4, Z22 \
	VPDPBUSD.BCST   20(R13), Z5, Z22 \
	VPDPBUSD.BCST   24(R13), Z6, Z22 \
	VPDPBUSD.BCST   28(R13), Z7, Z22 \
	VPMULLD         Z23, Z22, Z22 \
	VPADDD          Z22, Z21, Z21 \
	VPADDD          (AX), Z21, Z21 \
	VMOVDQU32       Z21, (AX) \
	ADDQ BX, R13 \
	LEAQ (R10)(R9*8), R10 \
	ADDQ $64, AX \
	DECQ R12 \
	JNZ  lbl

// Q3KHALF(h, r0..r3, lo shifts, hi shifts, labels): half h's qs bytes
// transposed, then its four shifts (groups 8h..8h+7; scale bytes 0-3 in
// Z16 for shifts 0 and 1, 4-7 in Z18 for 2 and 3).
#define Q3KHALF(h, r0, r1, r2, r3, l0, l1, l2, l3, l4, l5, l6, l7, h0, h1, h2, h3, t0, t1, t2, t3) \
	R16LOAD32(32+32*h) \
	Q3KSHIFT(h, 0, r0, Z16, l0, h0, l1, h1, t0) \
	Q3KSHIFT(h, 1, r1, Z16, l2, h2, l3, h3, t1) \
	Q3KSHIFT(h, 2, r2, Z18, l4, h0+2, l5, h1+2, t2) \
	Q3KSHIFT(h, 3, r3, Z18, l6, h2+2, l7, h3+2, t3)

// Q2KLEVELS(sh, zq, zo): (zq >> sh) & 3.
#define Q2KLEVELS(sh, zq, zo) \
	VPSRLD $sh, zq, zo \
	VPANDD.BCST ·r16c03(SB), zo, zo

// Q2KSUB(w0, w1, w2, w3, off, sc, z): a group's integer (weights w0..w3
// against the token's 16 bytes at off(R13)) times its scale, in z.
#define Q2KSUB(w0, w1, w2, w3, off, sc, z) \
	VPXORD          z, z, z \
	VPDPBUSD.BCST   off(R13), w0, z \
	VPDPBUSD.BCST   (off+4)(R13), w1, z \
	VPDPBUSD.BCST   (off+8)(R13), w2, z \
	VPDPBUSD.BCST   (off+12)(R13), w3, z \
	VPMULLD         sc, z, z

// Q2KCHUNK(h, q, lbl): chunk (h, q) from half h's qs bytes in Z24..Z31.
#define Q2KCHUNK(h, q, lbl) \
	R16PF7(336) \
	Q2KLEVELS(4*q, Z24, Z8) \
	Q2KLEVELS(4*q, Z25, Z9) \
	Q2KLEVELS(4*q, Z26, Z10) \
	Q2KLEVELS(4*q, Z27, Z11) \
	Q2KLEVELS(4*q, Z28, Z12) \
	Q2KLEVELS(4*q, Z29, Z13) \
	Q2KLEVELS(4*q, Z30, Z14) \
	Q2KLEVELS(4*q, Z31, Z15) \
	Q2KLEVELS(4*q+2, Z24, Z0) \
	Q2KLEVELS(4*q+2, Z25, Z1) \
	Q2KLEVELS(4*q+2, Z26, Z2) \
	Q2KLEVELS(4*q+2, Z27, Z3) \
	Q2KLEVELS(4*q+2, Z28, Z4) \
	Q2KLEVELS(4*q+2, Z29, Z5) \
	Q2KLEVELS(4*q+2, Z30, Z6) \
	Q2KLEVELS(4*q+2, Z31, Z7) \
	VMOVDQU64 (64*(2*h+q))(SP), Z21 \
	VPANDD.BCST ·r16c0f(SB), Z21, Z21 \
	VPSLLD $24, Z21, Z18 \
	VPSRLD $24, Z18, Z18 \
	VPSLLD $16, Z21, Z19 \
	VPSRLD $24, Z19, Z19 \
	VPSLLD $8, Z21, Z20 \
	VPSRLD $24, Z20, Z20 \
	VPSRLD $24, Z21, Z23 \
	LEAQ (128*h+64*q)(DI), R13 \
	KSTOKS \
lbl: \
	Q2KSUB(Z8, Z9, Z10, Z11, 0, Z18, Z21) \
	Q2KSUB(Z12, Z13, Z14, Z15, 16, Z19, Z22) \
	VPADDD          Z22, Z21, Z21 \
	Q2KSUB(Z0, Z1, Z2, Z3, 32, Z20, Z22) \
	VPADDD          Z22, Z21, Z21 \
	Q2KSUB(Z4, Z5, Z6, Z7, 48, Z23, Z22) \
	VPADDD          Z22, Z21, Z21 \
	VPADDD          (AX), Z21, Z21 \
	VMOVDQU32       Z21, (AX) \
	ADDQ BX, R13 \
	ADDQ $64, AX \
	DECQ R12 \
	JNZ  lbl

// Q2KHALF(h, l0, l1): half h's qs bytes transposed into Z24..Z31, then its
// two chunks.
#define Q2KHALF(h, l0, l1) \
	KHOLD32(16+32*h) \
	Q2KCHUNK(h, 0, l0) \
	Q2KCHUNK(h, 1, l1)

// Q2KPAIRS(x, zlo, zhi): the mins of scale bytes 0, 1 and 2, 3 of x's
// dwords as word pairs (the high nibbles, at bits 0 and 16).
#define Q2KPAIRS(x, zlo, zhi) \
	VPSRLD $4, x, zlo \
	VPSLLD $4, x, Z12 \
	VPANDD.BCST ·r16cf0000(SB), Z12, Z12 \
	VPTERNLOGD.BCST $0xEC, ·r16c15(SB), Z12, zlo \
	VPSRLD $20, x, zhi \
	VPSRLD $12, x, Z12 \
	VPANDD.BCST ·r16cf0000(SB), Z12, Z12 \
	VPTERNLOGD.BCST $0xEC, ·r16c15(SB), Z12, zhi

// Q2KFLOAT(lbl): per token C (the min pairs in Z0..Z7 against the 16-sums'
// dwords) and acc = acc + (d_a d) S - (d_a dmin) C; S cleared.
#define Q2KFLOAT(lbl) \
	VMOVDQU64 (SP), Z8 \
	VMOVDQU64 64(SP), Z9 \
	VMOVDQU64 128(SP), Z10 \
	VMOVDQU64 192(SP), Z11 \
	Q2KPAIRS(Z8, Z0, Z1) \
	Q2KPAIRS(Z9, Z2, Z3) \
	Q2KPAIRS(Z10, Z4, Z5) \
	Q2KPAIRS(Z11, Z6, Z7) \
	KXNORW K2, K2, K2 \
	VPGATHERDD 80(SI)(Z17*1), K2, Z23 \
	VPMOVDW    Z23, Y20 \
	VCVTPH2PS  Y20, Z20 \
	VPSRLD     $16, Z23, Z23 \
	VPMOVDW    Z23, Y23 \
	VCVTPH2PS  Y23, Z23 \
	VPXORD     Z19, Z19, Z19 \
	MOVQ DX, R14 \
	MOVQ R8, R10 \
	KSACC \
lbl: \
	VPXORD         Z22, Z22, Z22 \
	VPDPWSSD.BCST  (R10), Z0, Z22 \
	VPDPWSSD.BCST  4(R10), Z1, Z22 \
	VPDPWSSD.BCST  8(R10), Z2, Z22 \
	VPDPWSSD.BCST  12(R10), Z3, Z22 \
	VPDPWSSD.BCST  16(R10), Z4, Z22 \
	VPDPWSSD.BCST  20(R10), Z5, Z22 \
	VPDPWSSD.BCST  24(R10), Z6, Z22 \
	VPDPWSSD.BCST  28(R10), Z7, Z22 \
	VCVTDQ2PS   (R13), Z21 \
	VMULPS.BCST (R14), Z20, Z24 \
	VMULPS      Z24, Z21, Z21 \
	VADDPS      (AX), Z21, Z21 \
	VCVTDQ2PS   Z22, Z22 \
	VMULPS.BCST (R14), Z23, Z24 \
	VMULPS      Z24, Z22, Z22 \
	VSUBPS      Z22, Z21, Z21 \
	VMOVUPS     Z21, (AX) \
	VMOVDQU32   Z19, (R13) \
	ADDQ R9, R14 \
	LEAQ (R10)(R9*8), R10 \
	ADDQ $64, AX \
	ADDQ $64, R13 \
	DECQ R12 \
	JNZ  lbl
