//go:build !purego

#include "textflag.h"
#include "reduce_amd64.h"

// Q8WIDEN widens one Q8_0 block to 32 floats in za and zb: its half-float
// scale (at scale) broadcast into zs (xs its X half), its int8 quants (16 at
// lo, 16 at hi) converted and scaled. AX is clobbered.
#define Q8WIDEN(scale, lo, hi, xs, zs, za, zb) \
	MOVWLZX scale, AX; \
	VMOVD   AX, xs; \
	VCVTPH2PS xs, xs; \
	VBROADCASTSS xs, zs; \
	VPMOVSXBD lo, za; \
	VPMOVSXBD hi, zb; \
	VCVTDQ2PS za, za; \
	VCVTDQ2PS zb, zb; \
	VMULPS zs, za, za; \
	VMULPS zs, zb, zb

// AVX-512F kernels for float weights, chosen over the AVX2 ones where the
// CPU has AVX-512 (see kernels.go: one kernel family runs per process, so a
// token's output stays bit-identical alone or batched).

// func dot2x4F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32)
// The 16-wide twin of dot2x4F32AVX2: one accumulator per pair over 16-wide
// chunks; n is a multiple of 16.
TEXT ·dot2x4F32AVX512(SB), NOSPLIT, $0-48
	TILEARGS
	LEAQ (BX)(BX*2), R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	SHRQ $4, CX
	JZ   z24F32_done

z24F32_loop:
	VMOVUPS (DI), Z8
	VMOVUPS (DI)(R9*1), Z9
	VMOVUPS (SI), Z10
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z10, Z9, Z4
	VMOVUPS (SI)(BX*1), Z11
	VFMADD231PS Z11, Z8, Z1
	VFMADD231PS Z11, Z9, Z5
	VMOVUPS (SI)(BX*2), Z10
	VFMADD231PS Z10, Z8, Z2
	VFMADD231PS Z10, Z9, Z6
	VMOVUPS (SI)(R8*1), Z11
	VFMADD231PS Z11, Z8, Z3
	VFMADD231PS Z11, Z9, Z7
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  z24F32_loop

z24F32_done:
	// Fold each 16-wide accumulator to 8 lanes, then reduce as the AVX2 kernels do.
	FOLDZ(Z0, Y0, Y12)
	FOLDZ(Z1, Y1, Y12)
	FOLDZ(Z2, Y2, Y12)
	FOLDZ(Z3, Y3, Y12)
	FOLDZ(Z4, Y4, Y12)
	FOLDZ(Z5, Y5, Y12)
	FOLDZ(Z6, Y6, Y12)
	FOLDZ(Z7, Y7, Y12)
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 16(DX))
	VZEROUPPER
	RET

// func dot1F32AVX512(w *float32, x *float32, n int) float32
// One pair, in dot2x4F32AVX512's order; n is a multiple of 16. A batch-1
// decode streams every weight through here: prefetching 4 KiB ahead keeps
// the stream going across the mapped file's page boundaries.
TEXT ·dot1F32AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	SHRQ $4, CX
	JZ   z11F32_done

z11F32_loop:
	PREFETCHT0 4096(DI)
	VMOVUPS (DI), Z8
	VFMADD231PS (SI), Z8, Z0
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  z11F32_loop

z11F32_done:
	FOLDZ(Z0, Y0, Y12)
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot2x4F16AVX512(w *uint16, wstride int, x *float32, xstride, n int, out *float32)
// The 16-wide twin of dot2x4F16AVX2: one accumulator per pair over 16-wide
// chunks; n is a multiple of 16.
TEXT ·dot2x4F16AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ wstride+8(FP), R9
	MOVQ x+16(FP), SI
	MOVQ xstride+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	SHLQ $1, R9
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	SHRQ $4, CX
	JZ   z24F16_done

z24F16_loop:
	VCVTPH2PS (DI), Z8
	VCVTPH2PS (DI)(R9*1), Z9
	VMOVUPS (SI), Z10
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z10, Z9, Z4
	VMOVUPS (SI)(BX*1), Z11
	VFMADD231PS Z11, Z8, Z1
	VFMADD231PS Z11, Z9, Z5
	VMOVUPS (SI)(BX*2), Z10
	VFMADD231PS Z10, Z8, Z2
	VFMADD231PS Z10, Z9, Z6
	VMOVUPS (SI)(R8*1), Z11
	VFMADD231PS Z11, Z8, Z3
	VFMADD231PS Z11, Z9, Z7
	ADDQ $32, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  z24F16_loop

z24F16_done:
	// Fold each 16-wide accumulator to 8 lanes, then reduce as the AVX2 kernels do.
	FOLDZ(Z0, Y0, Y12)
	FOLDZ(Z1, Y1, Y12)
	FOLDZ(Z2, Y2, Y12)
	FOLDZ(Z3, Y3, Y12)
	FOLDZ(Z4, Y4, Y12)
	FOLDZ(Z5, Y5, Y12)
	FOLDZ(Z6, Y6, Y12)
	FOLDZ(Z7, Y7, Y12)
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 16(DX))
	VZEROUPPER
	RET

// func dot1F16AVX512(w *uint16, x *float32, n int) float32
// One pair, in dot2x4F16AVX512's order; n is a multiple of 16.
TEXT ·dot1F16AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	SHRQ $4, CX
	JZ   z11F16_done

z11F16_loop:
	PREFETCHT0 4096(DI)
	VCVTPH2PS (DI), Z8
	VFMADD231PS (SI), Z8, Z0
	ADDQ $32, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  z11F16_loop

z11F16_done:
	FOLDZ(Z0, Y0, Y12)
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET


// func dot4x4F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32)
// out[4*r+t] = w[r*wstride:] . x[t*xstride:] for rows r and tokens t in
// 0..3: sixteen accumulators, each reduced as dot1F32AVX512 reduces its one,
// so every pair is bit-identical to dot1's. n is a multiple of 16.
TEXT ·dot4x4F32AVX512(SB), NOSPLIT, $0-48
	TILEARGS
	LEAQ (R9)(R9*2), R10
	LEAQ (BX)(BX*2), R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	SHRQ $4, CX
	JZ   z44_done

z44_loop:
	VMOVUPS (DI), Z16
	VMOVUPS (DI)(R9*1), Z17
	VMOVUPS (DI)(R9*2), Z18
	VMOVUPS (DI)(R10*1), Z19
	VMOVUPS (SI), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z4
	VFMADD231PS Z20, Z18, Z8
	VFMADD231PS Z20, Z19, Z12
	VMOVUPS (SI)(BX*1), Z21
	VFMADD231PS Z21, Z16, Z1
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z21, Z18, Z9
	VFMADD231PS Z21, Z19, Z13
	VMOVUPS (SI)(BX*2), Z22
	VFMADD231PS Z22, Z16, Z2
	VFMADD231PS Z22, Z17, Z6
	VFMADD231PS Z22, Z18, Z10
	VFMADD231PS Z22, Z19, Z14
	VMOVUPS (SI)(R8*1), Z23
	VFMADD231PS Z23, Z16, Z3
	VFMADD231PS Z23, Z17, Z7
	VFMADD231PS Z23, Z18, Z11
	VFMADD231PS Z23, Z19, Z15
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  z44_loop

z44_done:
	FOLDZ(Z0, Y0, Y16)
	FOLDZ(Z1, Y1, Y16)
	FOLDZ(Z2, Y2, Y16)
	FOLDZ(Z3, Y3, Y16)
	FOLDZ(Z4, Y4, Y16)
	FOLDZ(Z5, Y5, Y16)
	FOLDZ(Z6, Y6, Y16)
	FOLDZ(Z7, Y7, Y16)
	FOLDZ(Z8, Y8, Y16)
	FOLDZ(Z9, Y9, Y16)
	FOLDZ(Z10, Y10, Y16)
	FOLDZ(Z11, Y11, Y16)
	FOLDZ(Z12, Y12, Y16)
	FOLDZ(Z13, Y13, Y16)
	FOLDZ(Z14, Y14, Y16)
	FOLDZ(Z15, Y15, Y16)
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 16(DX))
	HSUM4(Y8, Y9, Y10, Y11, X8, X9, 32(DX))
	HSUM4(Y12, Y13, Y14, Y15, X12, X13, 48(DX))
	VZEROUPPER
	RET

// func dequantQ8AVX512(src *byte, dst *float32, nblocks int)
// The 16-wide twin of dequantQ8AVX2 (same values: the products are exact).
TEXT ·dequantQ8AVX512(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nblocks+16(FP), CX
	TESTQ CX, CX
	JZ    zdeq_done

zdeq_loop:
	PREFETCHT0 4096(SI)
	Q8WIDEN((SI), 2(SI), 18(SI), X0, Z0, Z1, Z2)
	VMOVUPS Z1, (DI)
	VMOVUPS Z2, 64(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  zdeq_loop

zdeq_done:
	VZEROUPPER
	RET

// Fused Q8_0 kernels for small batches: each block is widened and scaled in
// registers (the same exact products dequantQ8AVX512 stores) and used at
// once, so the weights stream from memory a single time. The FMAs and the
// reduction are dot1F32AVX512's, so results are bit-identical to the
// dequantize-then-tile path.

// func dot1Q8F32AVX512(w *byte, x *float32, nblocks int) float32
TEXT ·dot1Q8F32AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nblocks+16(FP), CX
	VPXORD Z0, Z0, Z0
	TESTQ CX, CX
	JZ    zq1_done

zq1_loop:
	PREFETCHT0 4096(SI)
	Q8WIDEN((SI), 2(SI), 18(SI), X3, Z3, Z1, Z2)
	VFMADD231PS (DI), Z1, Z0
	VFMADD231PS 64(DI), Z2, Z0
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  zq1_loop

zq1_done:
	FOLDZ(Z0, Y0, Y12)
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot4Q8F32AVX512(w *byte, x *float32, xstride, nblocks int, out *float32)
// out[t] = w . x[t*xstride:] for tokens t in 0..3.
TEXT ·dot4Q8F32AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ xstride+16(FP), BX
	MOVQ nblocks+24(FP), CX
	MOVQ out+32(FP), DX
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ CX, CX
	JZ    zq4_done

zq4_loop:
	PREFETCHT0 4096(SI)
	Q8WIDEN((SI), 2(SI), 18(SI), X6, Z6, Z4, Z5)
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS (DI)(BX*1), Z4, Z1
	VFMADD231PS (DI)(BX*2), Z4, Z2
	VFMADD231PS (DI)(R8*1), Z4, Z3
	VFMADD231PS 64(DI), Z5, Z0
	VFMADD231PS 64(DI)(BX*1), Z5, Z1
	VFMADD231PS 64(DI)(BX*2), Z5, Z2
	VFMADD231PS 64(DI)(R8*1), Z5, Z3
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  zq4_loop

zq4_done:
	FOLDZ(Z0, Y0, Y12)
	FOLDZ(Z1, Y1, Y12)
	FOLDZ(Z2, Y2, Y12)
	FOLDZ(Z3, Y3, Y12)
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	VZEROUPPER
	RET

// func dot4rQ8F32AVX512(w *byte, wstride int, x *float32, nblocks int, out *float32)
// out[r] = w[r*wstride:] . x for rows r in 0..3: dot1Q8F32AVX512 for four
// rows at once, loading each chunk of x once (batch-1 decode).
TEXT ·dot4rQ8F32AVX512(SB), NOSPLIT, $0-40
	R4ARGS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ CX, CX
	JZ    zq4r_done

zq4r_loop:
	PREFETCH4R(4096)
	VMOVUPS (DI), Z4
	VMOVUPS 64(DI), Z5

	Q8WIDEN((SI), 2(SI), 18(SI), X6, Z6, Z7, Z8)
	VFMADD231PS Z4, Z7, Z0
	VFMADD231PS Z5, Z8, Z0

	Q8WIDEN((SI)(BX*1), 2(SI)(BX*1), 18(SI)(BX*1), X9, Z9, Z10, Z11)
	VFMADD231PS Z4, Z10, Z1
	VFMADD231PS Z5, Z11, Z1

	Q8WIDEN((SI)(BX*2), 2(SI)(BX*2), 18(SI)(BX*2), X6, Z6, Z7, Z8)
	VFMADD231PS Z4, Z7, Z2
	VFMADD231PS Z5, Z8, Z2

	Q8WIDEN((SI)(R8*1), 2(SI)(R8*1), 18(SI)(R8*1), X9, Z9, Z10, Z11)
	VFMADD231PS Z4, Z10, Z3
	VFMADD231PS Z5, Z11, Z3

	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  zq4r_loop

zq4r_done:
	FOLDZ(Z0, Y0, Y12)
	FOLDZ(Z1, Y1, Y12)
	FOLDZ(Z2, Y2, Y12)
	FOLDZ(Z3, Y3, Y12)
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	VZEROUPPER
	RET

// func dot4x6F32AVX512(w *float32, wstride int, x *float32, xstride, n int, out *float32)
// out[4*t+r] = w[r*wstride:] . x[t*xstride:] for rows r in 0..3 and tokens
// t in 0..5: twenty-four accumulators, each reduced as dot1F32AVX512
// reduces its one, so every pair is bit-identical to dot1's. The four rows
// stay in registers through a step, so each token vector is loaded once
// for four FMAs. n is a multiple of 16.
TEXT ·dot4x6F32AVX512(SB), NOSPLIT, $0-48
	TILEARGS
	LEAQ (R9)(R9*2), R10
	LEAQ (BX)(BX*2), R8
	LEAQ (SI)(BX*4), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	SHRQ $4, CX
	JZ   z46_done

z46_loop:
	VMOVUPS (DI), Z24
	VMOVUPS (DI)(R9*1), Z25
	VMOVUPS (DI)(R9*2), Z26
	VMOVUPS (DI)(R10*1), Z27
	VMOVUPS (SI), Z28
	VFMADD231PS Z28, Z24, Z0
	VFMADD231PS Z28, Z25, Z1
	VFMADD231PS Z28, Z26, Z2
	VFMADD231PS Z28, Z27, Z3
	VMOVUPS (SI)(BX*1), Z29
	VFMADD231PS Z29, Z24, Z4
	VFMADD231PS Z29, Z25, Z5
	VFMADD231PS Z29, Z26, Z6
	VFMADD231PS Z29, Z27, Z7
	VMOVUPS (SI)(BX*2), Z28
	VFMADD231PS Z28, Z24, Z8
	VFMADD231PS Z28, Z25, Z9
	VFMADD231PS Z28, Z26, Z10
	VFMADD231PS Z28, Z27, Z11
	VMOVUPS (SI)(R8*1), Z29
	VFMADD231PS Z29, Z24, Z12
	VFMADD231PS Z29, Z25, Z13
	VFMADD231PS Z29, Z26, Z14
	VFMADD231PS Z29, Z27, Z15
	VMOVUPS (R11), Z28
	VFMADD231PS Z28, Z24, Z16
	VFMADD231PS Z28, Z25, Z17
	VFMADD231PS Z28, Z26, Z18
	VFMADD231PS Z28, Z27, Z19
	VMOVUPS (R11)(BX*1), Z29
	VFMADD231PS Z29, Z24, Z20
	VFMADD231PS Z29, Z25, Z21
	VFMADD231PS Z29, Z26, Z22
	VFMADD231PS Z29, Z27, Z23
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, R11
	DECQ CX
	JNZ  z46_loop

z46_done:
	FOLDZ(Z0, Y0, Y24)
	FOLDZ(Z1, Y1, Y24)
	FOLDZ(Z2, Y2, Y24)
	FOLDZ(Z3, Y3, Y24)
	FOLDZ(Z4, Y4, Y24)
	FOLDZ(Z5, Y5, Y24)
	FOLDZ(Z6, Y6, Y24)
	FOLDZ(Z7, Y7, Y24)
	FOLDZ(Z8, Y8, Y24)
	FOLDZ(Z9, Y9, Y24)
	FOLDZ(Z10, Y10, Y24)
	FOLDZ(Z11, Y11, Y24)
	FOLDZ(Z12, Y12, Y24)
	FOLDZ(Z13, Y13, Y24)
	FOLDZ(Z14, Y14, Y24)
	FOLDZ(Z15, Y15, Y24)
	FOLDZ(Z16, Y16, Y24)
	FOLDZ(Z17, Y17, Y24)
	FOLDZ(Z18, Y18, Y24)
	FOLDZ(Z19, Y19, Y24)
	FOLDZ(Z20, Y20, Y24)
	FOLDZ(Z21, Y21, Y24)
	FOLDZ(Z22, Y22, Y24)
	FOLDZ(Z23, Y23, Y24)
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 16(DX))
	HSUM4(Y8, Y9, Y10, Y11, X8, X9, 32(DX))
	HSUM4(Y12, Y13, Y14, Y15, X12, X13, 48(DX))
	// VHADDPS has no EVEX form: the last eight sums move below Y16 first.
	VMOVAPS Y16, Y0
	VMOVAPS Y17, Y1
	VMOVAPS Y18, Y2
	VMOVAPS Y19, Y3
	VMOVAPS Y20, Y4
	VMOVAPS Y21, Y5
	VMOVAPS Y22, Y6
	VMOVAPS Y23, Y7
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, 64(DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 80(DX))
	VZEROUPPER
	RET

// func dot1BF16AVX512(w *uint16, x *float32, n int) float32
// dot1F32AVX512 on bfloat16 weights widened in registers (exactly: a
// bfloat16 is a float32's top half), so the sum is the one dot1F32 gives
// on the dequantized row; n is a multiple of 16.
TEXT ·dot1BF16AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	SHRQ $4, CX
	JZ   z11BF16_done

z11BF16_loop:
	PREFETCHT0 4096(DI)
	VPMOVZXWD (DI), Z8
	VPSLLD $16, Z8, Z8
	VFMADD231PS (SI), Z8, Z0
	ADDQ $32, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  z11BF16_loop

z11BF16_done:
	FOLDZ(Z0, Y0, Y12)
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET
