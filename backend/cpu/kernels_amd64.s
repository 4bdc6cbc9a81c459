//go:build !purego

#include "textflag.h"
#include "reduce_amd64.h"
#include "exp_amd64.h"

// Q8SCALE broadcasts a Q8_0 block's half-float scale (at scale) into ys;
// xs is its X half. AX is clobbered.
#define Q8SCALE(scale, xs, ys) \
	MOVWLZX scale, AX; \
	VMOVD   AX, xs; \
	VCVTPH2PS xs, xs; \
	VBROADCASTSS xs, ys

// Q8CHUNK widens 8 int8 quants at src into floats in y, scaled by ys.
#define Q8CHUNK(src, ys, y) \
	VPMOVSXBD src, y; \
	VCVTDQ2PS y, y; \
	VMULPS ys, y, y

// ZEROY4 and ZEROY12 clear the accumulators Y0-Y3 and Y0-Y11.
#define ZEROY4 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3

#define ZEROY12 \
	ZEROY4; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

// AVX2 + FMA (+ F16C) kernels. Lengths are multiples of the unroll (the Go
// wrappers do the tails); loads are unaligned. Go's operand order is the
// reverse of Intel's: VFMADD231PS m, a, acc computes acc += a * m.

// func dotF32AVX2(a, b *float32, n int) float32
// n is a multiple of 32.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	ZEROY4
	SHRQ $5, CX
	JZ   dotf32_done

dotf32_loop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dotf32_loop

dotf32_done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot2x4F32AVX2(w *float32, wstride int, x *float32, xstride, n int, out *float32)
// out[4*r+t] = w[r*wstride:] . x[t*xstride:] for rows r in 0..1 and tokens t
// in 0..3: one accumulator per pair over 8-wide chunks, so that the result
// is bit-identical to dot1 for the same pair. n is a multiple of 8.
TEXT ·dot2x4F32AVX2(SB), NOSPLIT, $0-48
	TILEARGS
	LEAQ (BX)(BX*2), R8
	ZEROY4
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SHRQ $3, CX
	JZ   d24F32_done

d24F32_loop:
	VMOVUPS (DI), Y8
	VMOVUPS (DI)(R9*1), Y9
	VMOVUPS (SI), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMOVUPS (SI)(BX*1), Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMOVUPS (SI)(BX*2), Y10
	VFMADD231PS Y10, Y8, Y2
	VFMADD231PS Y10, Y9, Y6
	VMOVUPS (SI)(R8*1), Y11
	VFMADD231PS Y11, Y8, Y3
	VFMADD231PS Y11, Y9, Y7
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  d24F32_loop

d24F32_done:
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 16(DX))
	VZEROUPPER
	RET

// func dot2x6F32AVX2(w *float32, wstride int, x *float32, xstride, n int, out *float32)
// out[2*t+r] = w[r*wstride:] . x[t*xstride:] for rows r in 0..1 and tokens
// t in 0..5, each pair in dot1's order (bit-identical). Twelve accumulators
// where dot2x4 has eight: eight FMA chains of four cycles' latency left
// two ports too little slack, and each row vector now feeds six FMAs.
// n is a multiple of 8.
TEXT ·dot2x6F32AVX2(SB), NOSPLIT, $0-48
	TILEARGS
	LEAQ (BX)(BX*2), R8
	LEAQ (BX)(BX*4), R10
	ZEROY12
	SHRQ $3, CX
	JZ   d26F32_done

d26F32_loop:
	VMOVUPS (DI), Y12
	VMOVUPS (DI)(R9*1), Y13
	VMOVUPS (SI), Y14
	VFMADD231PS Y14, Y12, Y0
	VFMADD231PS Y14, Y13, Y6
	VMOVUPS (SI)(BX*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y7
	VMOVUPS (SI)(BX*2), Y14
	VFMADD231PS Y14, Y12, Y2
	VFMADD231PS Y14, Y13, Y8
	VMOVUPS (SI)(R8*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y9
	VMOVUPS (SI)(BX*4), Y14
	VFMADD231PS Y14, Y12, Y4
	VFMADD231PS Y14, Y13, Y10
	VMOVUPS (SI)(R10*1), Y15
	VFMADD231PS Y15, Y12, Y5
	VFMADD231PS Y15, Y13, Y11
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  d26F32_loop

d26F32_done:
	HSUM4(Y0, Y6, Y1, Y7, X0, X12, (DX))
	HSUM4(Y2, Y8, Y3, Y9, X2, X12, 16(DX))
	HSUM4(Y4, Y10, Y5, Y11, X4, X12, 32(DX))
	VZEROUPPER
	RET

// func dot1F32AVX2(w *float32, x *float32, n int) float32
// One pair, in dot2x4's order; n is a multiple of 8.
TEXT ·dot1F32AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	SHRQ $3, CX
	JZ   d11F32_done

d11F32_loop:
	VMOVUPS (DI), Y8
	VFMADD231PS (SI), Y8, Y0
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  d11F32_loop

d11F32_done:
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot2x4F16AVX2(w *uint16, wstride int, x *float32, xstride, n int, out *float32)
// out[4*r+t] = w[r*wstride:] . x[t*xstride:] for rows r in 0..1 and tokens t
// in 0..3: one accumulator per pair over 8-wide chunks, so that the result
// is bit-identical to dot1 for the same pair. n is a multiple of 8.
TEXT ·dot2x4F16AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ wstride+8(FP), R9
	MOVQ x+16(FP), SI
	MOVQ xstride+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	SHLQ $1, R9
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R8
	ZEROY4
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SHRQ $3, CX
	JZ   d24F16_done

d24F16_loop:
	VCVTPH2PS (DI), Y8
	VCVTPH2PS (DI)(R9*1), Y9
	VMOVUPS (SI), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMOVUPS (SI)(BX*1), Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMOVUPS (SI)(BX*2), Y10
	VFMADD231PS Y10, Y8, Y2
	VFMADD231PS Y10, Y9, Y6
	VMOVUPS (SI)(R8*1), Y11
	VFMADD231PS Y11, Y8, Y3
	VFMADD231PS Y11, Y9, Y7
	ADDQ $16, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  d24F16_loop

d24F16_done:
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	HSUM4(Y4, Y5, Y6, Y7, X4, X5, 16(DX))
	VZEROUPPER
	RET

// func dot1F16AVX2(w *uint16, x *float32, n int) float32
// One pair, in dot2x4's order; n is a multiple of 8.
TEXT ·dot1F16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	SHRQ $3, CX
	JZ   d11F16_done

d11F16_loop:
	VCVTPH2PS (DI), Y8
	VFMADD231PS (SI), Y8, Y0
	ADDQ $16, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  d11F16_loop

d11F16_done:
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func fmaPeakAVX2(iters int)
// 10 independent FMA chains on registers: 160 flops per iteration.
TEXT ·fmaPeakAVX2(SB), NOSPLIT, $0-8
	MOVQ iters+0(FP), CX
	ZEROY12

fma_loop:
	VFMADD231PS Y10, Y11, Y0
	VFMADD231PS Y10, Y11, Y1
	VFMADD231PS Y10, Y11, Y2
	VFMADD231PS Y10, Y11, Y3
	VFMADD231PS Y10, Y11, Y4
	VFMADD231PS Y10, Y11, Y5
	VFMADD231PS Y10, Y11, Y6
	VFMADD231PS Y10, Y11, Y7
	VFMADD231PS Y10, Y11, Y8
	VFMADD231PS Y10, Y11, Y9
	DECQ CX
	JNZ  fma_loop
	VZEROUPPER
	RET

// func dequantQ8AVX2(src *byte, dst *float32, nblocks int)
// dst = the Q8_0 blocks of src as float32 (scale x int8, an exact product).
TEXT ·dequantQ8AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nblocks+16(FP), CX
	TESTQ CX, CX
	JZ    deq_done

deq_loop:
	PREFETCHT0 4096(SI) // the stream prefetcher alone runs dry at 4 KiB pages
	Q8SCALE((SI), X0, Y0)
	VPMOVSXBD 2(SI), Y1
	VPMOVSXBD 10(SI), Y2
	VPMOVSXBD 18(SI), Y3
	VPMOVSXBD 26(SI), Y4
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VMULPS Y0, Y1, Y1
	VMULPS Y0, Y2, Y2
	VMULPS Y0, Y3, Y3
	VMULPS Y0, Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  deq_loop

deq_done:
	VZEROUPPER
	RET

// SILU_Y5 sets Y5 = silu(Y5) = Y5/(1+exp(-Y5)) with EXP_Y0 (its argument
// also clamped above, at 88): c at R8, Y15 zero.
#define SILU_Y5 \
	VSUBPS Y5, Y15, Y0 \
	VMINPS 384(R8), Y0, Y0 \
	VMAXPS 320(R8), Y0, Y0 \
	EXP_Y0(R8) \
	VADDPS 288(R8), Y2, Y2 \
	VDIVPS Y2, Y5, Y5

// func swigluAVX2(h, h2 *float32, n int, c *float32)
// h[i] = silu(h[i]) * h2[i], for i < n (a multiple of 8): SILU_Y5.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-32
	MOVQ h+0(FP), DI
	MOVQ h2+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), R8
	VXORPS Y15, Y15, Y15
	SHRQ $3, CX
	JZ   swiglu_done

swiglu_loop:
	VMOVUPS (DI), Y5
	SILU_Y5
	VMULPS (SI), Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  swiglu_loop

swiglu_done:
	VZEROUPPER
	RET

// func siluAVX2(h *float32, n int, c *float32)
// h[i] = silu(h[i]) for i < n (a multiple of 8): SILU_Y5.
TEXT ·siluAVX2(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ c+16(FP), R8
	VXORPS Y15, Y15, Y15
	SHRQ $3, CX
	JZ   silu_done

silu_loop:
	VMOVUPS (DI), Y5
	SILU_Y5
	VMOVUPS Y5, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  silu_loop

silu_done:
	VZEROUPPER
	RET

// Fused Q8_0 kernels for small batches in the AVX2 family's order (8-wide
// chunks, dot1F32AVX2's reduction): each block widened and scaled in
// registers, exactly the values dequantQ8AVX2 stores.

// func dot1Q8F32AVX2(w *byte, x *float32, nblocks int) float32
TEXT ·dot1Q8F32AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nblocks+16(FP), CX
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JZ    yq1_done

yq1_loop:
	PREFETCHT0 4096(SI)
	Q8SCALE((SI), X8, Y8)
	Q8CHUNK(2(SI), Y8, Y4)
	VFMADD231PS 0(DI), Y4, Y0
	Q8CHUNK(10(SI), Y8, Y5)
	VFMADD231PS 32(DI), Y5, Y0
	Q8CHUNK(18(SI), Y8, Y6)
	VFMADD231PS 64(DI), Y6, Y0
	Q8CHUNK(26(SI), Y8, Y7)
	VFMADD231PS 96(DI), Y7, Y0
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  yq1_loop

yq1_done:
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot4Q8F32AVX2(w *byte, x *float32, xstride, nblocks int, out *float32)
// out[t] = w . x[t*xstride:] for tokens t in 0..3.
TEXT ·dot4Q8F32AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ xstride+16(FP), BX
	MOVQ nblocks+24(FP), CX
	MOVQ out+32(FP), DX
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R8
	ZEROY4
	TESTQ CX, CX
	JZ    yq4_done

yq4_loop:
	PREFETCHT0 4096(SI)
	Q8SCALE((SI), X8, Y8)
	Q8CHUNK(2(SI), Y8, Y4)
	Q8CHUNK(10(SI), Y8, Y5)
	Q8CHUNK(18(SI), Y8, Y6)
	Q8CHUNK(26(SI), Y8, Y7)
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 0(DI)(BX*1), Y4, Y1
	VFMADD231PS 0(DI)(BX*2), Y4, Y2
	VFMADD231PS 0(DI)(R8*1), Y4, Y3
	VFMADD231PS 32(DI), Y5, Y0
	VFMADD231PS 32(DI)(BX*1), Y5, Y1
	VFMADD231PS 32(DI)(BX*2), Y5, Y2
	VFMADD231PS 32(DI)(R8*1), Y5, Y3
	VFMADD231PS 64(DI), Y6, Y0
	VFMADD231PS 64(DI)(BX*1), Y6, Y1
	VFMADD231PS 64(DI)(BX*2), Y6, Y2
	VFMADD231PS 64(DI)(R8*1), Y6, Y3
	VFMADD231PS 96(DI), Y7, Y0
	VFMADD231PS 96(DI)(BX*1), Y7, Y1
	VFMADD231PS 96(DI)(BX*2), Y7, Y2
	VFMADD231PS 96(DI)(R8*1), Y7, Y3
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  yq4_loop

yq4_done:
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	VZEROUPPER
	RET

// R4CHUNK adds chunk c (8 values at src) of one row, scaled by ys, times
// the token's chunk in Y12 into acc: Q8CHUNK then dot1's FMA.
#define R4CHUNK(src, ys, t, acc) \
	Q8CHUNK(src, ys, t); \
	VFMADD231PS Y12, t, acc

// R4CHUNKS is chunk c of the four rows (byte offset o within a block).
#define R4CHUNKS(c, o) \
	VMOVUPS c(DI), Y12; \
	R4CHUNK(o(SI), Y8, Y4, Y0); \
	R4CHUNK(o(SI)(BX*1), Y9, Y5, Y1); \
	R4CHUNK(o(SI)(BX*2), Y10, Y6, Y2); \
	R4CHUNK(o(SI)(R8*1), Y11, Y7, Y3)

// func dot4rQ8F32AVX2(w *byte, wstride int, x *float32, nblocks int, out *float32)
// out[r] = dot1Q8F32AVX2(w[r*wstride:], x) for rows r in 0..3, bit for bit:
// each row keeps dot1's one accumulator and order. Four independent FMA
// chains hide the latency that bounds dot1 at batch 1, and four streams
// keep more lines in flight.
TEXT ·dot4rQ8F32AVX2(SB), NOSPLIT, $0-40
	R4ARGS
	ZEROY4
	TESTQ CX, CX
	JZ    yq4r_done

yq4r_loop:
	PREFETCH4R(8192)
	Q8SCALE((SI), X8, Y8)
	Q8SCALE((SI)(BX*1), X9, Y9)
	Q8SCALE((SI)(BX*2), X10, Y10)
	Q8SCALE((SI)(R8*1), X11, Y11)
	R4CHUNKS(0, 2)
	R4CHUNKS(32, 10)
	R4CHUNKS(64, 18)
	R4CHUNKS(96, 26)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  yq4r_loop

yq4r_done:
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	VZEROUPPER
	RET

// func dot1BF16AVX2(w *uint16, x *float32, n int) float32
// dot1F32AVX2 on bfloat16 weights widened in registers; n is a multiple of 8.
TEXT ·dot1BF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	SHRQ $3, CX
	JZ   d11BF16_done

d11BF16_loop:
	PREFETCHT0 2048(DI)
	VPMOVZXWD (DI), Y8
	VPSLLD $16, Y8, Y8
	VFMADD231PS (SI), Y8, Y0
	ADDQ $16, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  d11BF16_loop

d11BF16_done:
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET
