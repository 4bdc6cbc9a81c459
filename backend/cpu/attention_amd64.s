//go:build !purego

#include "textflag.h"
#include "reduce_amd64.h"
#include "exp_amd64.h"

// Attention kernels (AVX2 + FMA + F16C): a KV block's scores, its share of
// the weighted sum, the F16 store, and softmax's exponentials.

// func attnDotsAVX2(q, k *float32, kstride, hd, n int, out *float32)
// out[j] = q . k[j*kstride:][:hd] for j < n: the attention scores of one KV
// block, four positions at a time. hd is a multiple of 8.
TEXT ·attnDotsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), DI
	MOVQ k+8(FP), SI
	MOVQ kstride+16(FP), BX
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	SHLQ $2, BX
	SHLQ $2, R9
	LEAQ (BX)(BX*2), R8
	LEAQ (BX)(BX*1), R10
	ADDQ R10, R10
	CMPQ CX, $4
	JLT  dots_one

dots4_loop:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX

dots4_inner:
	VMOVUPS (DI)(AX*1), Y4
	LEAQ (SI)(AX*1), R11
	VFMADD231PS (R11), Y4, Y0
	VFMADD231PS (R11)(BX*1), Y4, Y1
	VFMADD231PS (R11)(BX*2), Y4, Y2
	VFMADD231PS (R11)(R8*1), Y4, Y3
	ADDQ $32, AX
	CMPQ AX, R9
	JLT  dots4_inner
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	ADDQ R10, SI
	ADDQ $16, DX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  dots4_loop

dots_one:
	TESTQ CX, CX
	JZ    dots_done

dots1_loop:
	VXORPS Y0, Y0, Y0
	XORQ AX, AX

dots1_inner:
	VMOVUPS (DI)(AX*1), Y4
	VFMADD231PS (SI)(AX*1), Y4, Y0
	ADDQ $32, AX
	CMPQ AX, R9
	JLT  dots1_inner
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, (DX)
	ADDQ BX, SI
	ADDQ $4, DX
	DECQ CX
	JNZ  dots1_loop

dots_done:
	VZEROUPPER
	RET

// func attnAccumAVX2(p, v *float32, vstride, hd, n int, out *float32)
// out[:hd] += sum_j p[j] * v[j*vstride:][:hd]: one KV block's share of the
// attention output, kept in registers 64 (then 8) columns at a time. hd is
// a multiple of 8; n > 0.
TEXT ·attnAccumAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ vstride+16(FP), BX
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	SHLQ $2, BX
	SHLQ $2, R9
	XORQ AX, AX

acc_chunk64:
	LEAQ 256(AX), R10
	CMPQ R10, R9
	JGT  acc_chunk8
	VMOVUPS (DX)(AX*1), Y0
	VMOVUPS 32(DX)(AX*1), Y1
	VMOVUPS 64(DX)(AX*1), Y2
	VMOVUPS 96(DX)(AX*1), Y3
	VMOVUPS 128(DX)(AX*1), Y4
	VMOVUPS 160(DX)(AX*1), Y5
	VMOVUPS 192(DX)(AX*1), Y6
	VMOVUPS 224(DX)(AX*1), Y7
	MOVQ DI, R11
	LEAQ (SI)(AX*1), R12
	MOVQ CX, R13

acc64_loop:
	VBROADCASTSS (R11), Y8
	VFMADD231PS (R12), Y8, Y0
	VFMADD231PS 32(R12), Y8, Y1
	VFMADD231PS 64(R12), Y8, Y2
	VFMADD231PS 96(R12), Y8, Y3
	VFMADD231PS 128(R12), Y8, Y4
	VFMADD231PS 160(R12), Y8, Y5
	VFMADD231PS 192(R12), Y8, Y6
	VFMADD231PS 224(R12), Y8, Y7
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  acc64_loop
	VMOVUPS Y0, (DX)(AX*1)
	VMOVUPS Y1, 32(DX)(AX*1)
	VMOVUPS Y2, 64(DX)(AX*1)
	VMOVUPS Y3, 96(DX)(AX*1)
	VMOVUPS Y4, 128(DX)(AX*1)
	VMOVUPS Y5, 160(DX)(AX*1)
	VMOVUPS Y6, 192(DX)(AX*1)
	VMOVUPS Y7, 224(DX)(AX*1)
	MOVQ R10, AX
	JMP  acc_chunk64

acc_chunk8:
	CMPQ AX, R9
	JGE  acc_done
	VMOVUPS (DX)(AX*1), Y0
	MOVQ DI, R11
	LEAQ (SI)(AX*1), R12
	MOVQ CX, R13

acc8_loop:
	VBROADCASTSS (R11), Y8
	VFMADD231PS (R12), Y8, Y0
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  acc8_loop
	VMOVUPS Y0, (DX)(AX*1)
	ADDQ $32, AX
	JMP  acc_chunk8

acc_done:
	VZEROUPPER
	RET

// The same two attention kernels over an F16 KV store: K and V rows are
// half floats (VCVTPH2PS widens 8 at a time); q, p and out stay float32.

// func attnDotsF16AVX2(q *float32, k *uint16, kstride, hd, n int, out *float32)
TEXT ·attnDotsF16AVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), DI
	MOVQ k+8(FP), SI
	MOVQ kstride+16(FP), BX
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	SHLQ $1, BX
	LEAQ (BX)(BX*2), R8
	LEAQ (BX)(BX*1), R10
	ADDQ R10, R10
	CMPQ CX, $4
	JLT  dotsh_one

dotsh4_loop:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX

dotsh4_inner:
	VMOVUPS (DI)(AX*4), Y4
	LEAQ (SI)(AX*2), R11
	VCVTPH2PS (R11), Y5
	VFMADD231PS Y5, Y4, Y0
	VCVTPH2PS (R11)(BX*1), Y6
	VFMADD231PS Y6, Y4, Y1
	VCVTPH2PS (R11)(BX*2), Y7
	VFMADD231PS Y7, Y4, Y2
	VCVTPH2PS (R11)(R8*1), Y8
	VFMADD231PS Y8, Y4, Y3
	ADDQ $8, AX
	CMPQ AX, R9
	JLT  dotsh4_inner
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	ADDQ R10, SI
	ADDQ $16, DX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  dotsh4_loop

dotsh_one:
	TESTQ CX, CX
	JZ    dotsh_done

dotsh1_loop:
	VXORPS Y0, Y0, Y0
	XORQ AX, AX

dotsh1_inner:
	VMOVUPS (DI)(AX*4), Y4
	VCVTPH2PS (SI)(AX*2), Y5
	VFMADD231PS Y5, Y4, Y0
	ADDQ $8, AX
	CMPQ AX, R9
	JLT  dotsh1_inner
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, (DX)
	ADDQ BX, SI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotsh1_loop

dotsh_done:
	VZEROUPPER
	RET

// func attnAccumF16AVX2(p *float32, v *uint16, vstride, hd, n int, out *float32)
TEXT ·attnAccumF16AVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ vstride+16(FP), BX
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	SHLQ $1, BX
	XORQ AX, AX

acch_chunk64:
	LEAQ 64(AX), R10
	CMPQ R10, R9
	JGT  acch_chunk8
	VMOVUPS (DX)(AX*4), Y0
	VMOVUPS 32(DX)(AX*4), Y1
	VMOVUPS 64(DX)(AX*4), Y2
	VMOVUPS 96(DX)(AX*4), Y3
	VMOVUPS 128(DX)(AX*4), Y4
	VMOVUPS 160(DX)(AX*4), Y5
	VMOVUPS 192(DX)(AX*4), Y6
	VMOVUPS 224(DX)(AX*4), Y7
	MOVQ DI, R11
	LEAQ (SI)(AX*2), R12
	MOVQ CX, R13

acch64_loop:
	VBROADCASTSS (R11), Y8
	VCVTPH2PS (R12), Y9
	VFMADD231PS Y9, Y8, Y0
	VCVTPH2PS 16(R12), Y10
	VFMADD231PS Y10, Y8, Y1
	VCVTPH2PS 32(R12), Y11
	VFMADD231PS Y11, Y8, Y2
	VCVTPH2PS 48(R12), Y12
	VFMADD231PS Y12, Y8, Y3
	VCVTPH2PS 64(R12), Y9
	VFMADD231PS Y9, Y8, Y4
	VCVTPH2PS 80(R12), Y10
	VFMADD231PS Y10, Y8, Y5
	VCVTPH2PS 96(R12), Y11
	VFMADD231PS Y11, Y8, Y6
	VCVTPH2PS 112(R12), Y12
	VFMADD231PS Y12, Y8, Y7
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  acch64_loop
	VMOVUPS Y0, (DX)(AX*4)
	VMOVUPS Y1, 32(DX)(AX*4)
	VMOVUPS Y2, 64(DX)(AX*4)
	VMOVUPS Y3, 96(DX)(AX*4)
	VMOVUPS Y4, 128(DX)(AX*4)
	VMOVUPS Y5, 160(DX)(AX*4)
	VMOVUPS Y6, 192(DX)(AX*4)
	VMOVUPS Y7, 224(DX)(AX*4)
	MOVQ R10, AX
	JMP  acch_chunk64

acch_chunk8:
	CMPQ AX, R9
	JGE  acch_done
	VMOVUPS (DX)(AX*4), Y0
	MOVQ DI, R11
	LEAQ (SI)(AX*2), R12
	MOVQ CX, R13

acch8_loop:
	VBROADCASTSS (R11), Y8
	VCVTPH2PS (R12), Y9
	VFMADD231PS Y9, Y8, Y0
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNZ  acch8_loop
	VMOVUPS Y0, (DX)(AX*4)
	ADDQ $8, AX
	JMP  acch_chunk8

acch_done:
	VZEROUPPER
	RET

// func toF16AVX2(src *float32, dst *uint16, n int)
// dst = src rounded to half floats, ties to even; n is a multiple of 8.
TEXT ·toF16AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   tof16_done

tof16_loop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  tof16_loop

tof16_done:
	VZEROUPPER
	RET

// func expSumAVX2(x *float32, n int, sub, scale float32, c *float32) float32
// x[i] = exp((x[i]-sub)*scale) for i < n (a multiple of 8), returning the
// sum: softmax's numerators (EXP_Y0, exp_amd64.h; c is &expConsts).
TEXT ·expSumAVX2(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS sub+16(FP), Y15
	VBROADCASTSS scale+20(FP), Y14
	MOVQ c+24(FP), R8
	VXORPS Y4, Y4, Y4
	SHRQ $3, CX
	JZ   exps_done

exps_loop:
	VMOVUPS (DI), Y0
	VSUBPS Y15, Y0, Y0
	VMULPS Y14, Y0, Y0
	VMAXPS 320(R8), Y0, Y0
	EXP_Y0(R8)
	VMOVUPS Y2, (DI)
	VADDPS Y2, Y4, Y4
	ADDQ $32, DI
	DECQ CX
	JNZ  exps_loop

exps_done:
	VEXTRACTF128 $1, Y4, X5
	VADDPS X5, X4, X4
	VHADDPS X4, X4, X4
	VHADDPS X4, X4, X4
	VMOVSS X4, ret+32(FP)
	VZEROUPPER
	RET

// func prefetchT0(p *byte, n int)
// Hints the n bytes from p into cache, a line at a time: KV blocks are
// scattered, so the hardware prefetcher cannot run ahead across them.
TEXT ·prefetchT0(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX

pf_loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLT  pf_loop
	RET
