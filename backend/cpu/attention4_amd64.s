//go:build !purego

#include "textflag.h"
#include "reduce_amd64.h"

// Four-query attention kernels (AVX-512VL): four consecutive query tokens
// of one sequence and head against the positions they all see. Each
// (query, position) pair and each output element is computed by the same
// operations, in the same order, as attnDotsF16AVX2 and attnAccumF16AVX2
// compute it for one query, so grouping queries changes no bit; the key or
// value row is converted from half floats once for the four.

// FOURARGS(a, astride, r, rstride) loads the four-query kernels' (a
// *float32, astride int, r *uint16, rstride, hd, n int, out *float32,
// ostride int): the queries (or probabilities) at DI, R12 bytes apart
// (R14: three); the key (value) rows at SI, BX bytes apart; hd in R9, n in
// CX; out at DX, R13 bytes apart (R15: three).
#define FOURARGS(a, astride, r, rstride) \
	MOVQ a+0(FP), DI \
	MOVQ astride+8(FP), R12 \
	MOVQ r+16(FP), SI \
	MOVQ rstride+24(FP), BX \
	MOVQ hd+32(FP), R9 \
	MOVQ n+40(FP), CX \
	MOVQ out+48(FP), DX \
	MOVQ ostride+56(FP), R13 \
	SHLQ $2, R12 \
	SHLQ $1, BX \
	SHLQ $2, R13 \
	LEAQ (R12)(R12*2), R14 \
	LEAQ (R13)(R13*2), R15

// func attnDots4F16AVX512(q *float32, qstride int, k *uint16, kstride, hd, n int, out *float32, ostride int)
// out[i*ostride+j] = q[i*qstride:][:hd] . k[j*kstride:][:hd] for queries
// i < 4 and positions j < n. hd is a multiple of 8.
TEXT ·attnDots4F16AVX512(SB), NOSPLIT, $0-64
	FOURARGS(q, qstride, k, kstride)
	LEAQ (BX)(BX*2), R8 // 3 rows of k
	CMPQ CX, $4
	JLT  d4q_one

d4q_loop:
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19
	VPXORD Y20, Y20, Y20
	VPXORD Y21, Y21, Y21
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23
	VPXORD Y24, Y24, Y24
	VPXORD Y25, Y25, Y25
	VPXORD Y26, Y26, Y26
	VPXORD Y27, Y27, Y27
	VPXORD Y28, Y28, Y28
	VPXORD Y29, Y29, Y29
	VPXORD Y30, Y30, Y30
	VPXORD Y31, Y31, Y31
	XORQ AX, AX

d4q_inner:
	LEAQ (SI)(AX*2), R11
	VCVTPH2PS (R11), Y0
	VCVTPH2PS (R11)(BX*1), Y1
	VCVTPH2PS (R11)(BX*2), Y2
	VCVTPH2PS (R11)(R8*1), Y3
	LEAQ (DI)(AX*4), R10
	VMOVUPS (R10), Y4
	VMOVUPS (R10)(R12*1), Y5
	VMOVUPS (R10)(R12*2), Y6
	VMOVUPS (R10)(R14*1), Y7
	VFMADD231PS Y0, Y4, Y16
	VFMADD231PS Y1, Y4, Y17
	VFMADD231PS Y2, Y4, Y18
	VFMADD231PS Y3, Y4, Y19
	VFMADD231PS Y0, Y5, Y20
	VFMADD231PS Y1, Y5, Y21
	VFMADD231PS Y2, Y5, Y22
	VFMADD231PS Y3, Y5, Y23
	VFMADD231PS Y0, Y6, Y24
	VFMADD231PS Y1, Y6, Y25
	VFMADD231PS Y2, Y6, Y26
	VFMADD231PS Y3, Y6, Y27
	VFMADD231PS Y0, Y7, Y28
	VFMADD231PS Y1, Y7, Y29
	VFMADD231PS Y2, Y7, Y30
	VFMADD231PS Y3, Y7, Y31
	ADDQ $8, AX
	CMPQ AX, R9
	JLT  d4q_inner
	VMOVAPS Y16, Y0
	VMOVAPS Y17, Y1
	VMOVAPS Y18, Y2
	VMOVAPS Y19, Y3
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX))
	VMOVAPS Y20, Y0
	VMOVAPS Y21, Y1
	VMOVAPS Y22, Y2
	VMOVAPS Y23, Y3
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX)(R13*1))
	VMOVAPS Y24, Y0
	VMOVAPS Y25, Y1
	VMOVAPS Y26, Y2
	VMOVAPS Y27, Y3
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX)(R13*2))
	VMOVAPS Y28, Y0
	VMOVAPS Y29, Y1
	VMOVAPS Y30, Y2
	VMOVAPS Y31, Y3
	HSUM4(Y0, Y1, Y2, Y3, X0, X1, (DX)(R15*1))
	LEAQ (SI)(BX*4), SI
	ADDQ $16, DX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  d4q_loop

d4q_one:
	TESTQ CX, CX
	JZ    d4q_done

d4q1_loop:
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19
	XORQ AX, AX

d4q1_inner:
	VCVTPH2PS (SI)(AX*2), Y0
	LEAQ (DI)(AX*4), R10
	VMOVUPS (R10), Y4
	VFMADD231PS Y0, Y4, Y16
	VMOVUPS (R10)(R12*1), Y5
	VFMADD231PS Y0, Y5, Y17
	VMOVUPS (R10)(R12*2), Y6
	VFMADD231PS Y0, Y6, Y18
	VMOVUPS (R10)(R14*1), Y7
	VFMADD231PS Y0, Y7, Y19
	ADDQ $8, AX
	CMPQ AX, R9
	JLT  d4q1_inner
	VMOVAPS Y16, Y0
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, (DX)
	VMOVAPS Y17, Y0
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, (DX)(R13*1)
	VMOVAPS Y18, Y0
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, (DX)(R13*2)
	VMOVAPS Y19, Y0
	VHADDPS Y0, Y0, Y0
	VHADDPS Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, (DX)(R15*1)
	ADDQ BX, SI
	ADDQ $4, DX
	DECQ CX
	JNZ  d4q1_loop

d4q_done:
	VZEROUPPER
	RET

// func attnAccum4F16AVX512(p *float32, pstride int, v *uint16, vstride, hd, n int, out *float32, ostride int)
// out[i*ostride+e] += sum over j < n of p[i*pstride+j] * v[j*vstride+e],
// for queries i < 4, in order of j (one FMA per term, as attnAccumF16AVX2).
// hd is a multiple of 64.
TEXT ·attnAccum4F16AVX512(SB), NOSPLIT, $0-64
	FOURARGS(p, pstride, v, vstride)
	TESTQ CX, CX
	JZ    a4q_done
	LEAQ (DI)(CX*4), CX // the end of query 0's probabilities
	XORQ AX, AX

a4q_chunk:
	CMPQ AX, R9
	JGE  a4q_done
	LEAQ (DX)(AX*4), R10
	VMOVUPS (R10), Z16
	VMOVUPS 64(R10), Z17
	VMOVUPS 128(R10), Z18
	VMOVUPS 192(R10), Z19
	VMOVUPS (R10)(R13*1), Z20
	VMOVUPS 64(R10)(R13*1), Z21
	VMOVUPS 128(R10)(R13*1), Z22
	VMOVUPS 192(R10)(R13*1), Z23
	VMOVUPS (R10)(R13*2), Z24
	VMOVUPS 64(R10)(R13*2), Z25
	VMOVUPS 128(R10)(R13*2), Z26
	VMOVUPS 192(R10)(R13*2), Z27
	VMOVUPS (R10)(R15*1), Z28
	VMOVUPS 64(R10)(R15*1), Z29
	VMOVUPS 128(R10)(R15*1), Z30
	VMOVUPS 192(R10)(R15*1), Z31
	MOVQ DI, R11
	LEAQ (SI)(AX*2), R8

a4q_loop:
	VCVTPH2PS (R8), Z0
	VCVTPH2PS 32(R8), Z1
	VCVTPH2PS 64(R8), Z2
	VCVTPH2PS 96(R8), Z3
	VBROADCASTSS (R11), Z4
	VFMADD231PS Z0, Z4, Z16
	VFMADD231PS Z1, Z4, Z17
	VFMADD231PS Z2, Z4, Z18
	VFMADD231PS Z3, Z4, Z19
	VBROADCASTSS (R11)(R12*1), Z5
	VFMADD231PS Z0, Z5, Z20
	VFMADD231PS Z1, Z5, Z21
	VFMADD231PS Z2, Z5, Z22
	VFMADD231PS Z3, Z5, Z23
	VBROADCASTSS (R11)(R12*2), Z6
	VFMADD231PS Z0, Z6, Z24
	VFMADD231PS Z1, Z6, Z25
	VFMADD231PS Z2, Z6, Z26
	VFMADD231PS Z3, Z6, Z27
	VBROADCASTSS (R11)(R14*1), Z7
	VFMADD231PS Z0, Z7, Z28
	VFMADD231PS Z1, Z7, Z29
	VFMADD231PS Z2, Z7, Z30
	VFMADD231PS Z3, Z7, Z31
	ADDQ $4, R11
	ADDQ BX, R8
	CMPQ R11, CX
	JLT  a4q_loop
	VMOVUPS Z16, (R10)
	VMOVUPS Z17, 64(R10)
	VMOVUPS Z18, 128(R10)
	VMOVUPS Z19, 192(R10)
	VMOVUPS Z20, (R10)(R13*1)
	VMOVUPS Z21, 64(R10)(R13*1)
	VMOVUPS Z22, 128(R10)(R13*1)
	VMOVUPS Z23, 192(R10)(R13*1)
	VMOVUPS Z24, (R10)(R13*2)
	VMOVUPS Z25, 64(R10)(R13*2)
	VMOVUPS Z26, 128(R10)(R13*2)
	VMOVUPS Z27, 192(R10)(R13*2)
	VMOVUPS Z28, (R10)(R15*1)
	VMOVUPS Z29, 64(R10)(R15*1)
	VMOVUPS Z30, 128(R10)(R15*1)
	VMOVUPS Z31, 192(R10)(R15*1)
	ADDQ $64, AX
	JMP  a4q_chunk

a4q_done:
	VZEROUPPER
	RET

// func attnDots4F16AVX2(q *float32, qstride int, k *uint16, kstride, hd, n int, out *float32, ostride int)
// attnDots4F16AVX512 in sixteen Y registers: two positions a pass, each
// key row converted once for the four queries, every score in
// attnDotsF16AVX2's order.
TEXT ·attnDots4F16AVX2(SB), NOSPLIT, $0-64
	FOURARGS(q, qstride, k, kstride)
	CMPQ CX, $2
	JLT  d4h_one

d4h_loop:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX

d4h_inner:
	LEAQ (SI)(AX*2), R11
	VCVTPH2PS (R11), Y8
	VCVTPH2PS (R11)(BX*1), Y9
	LEAQ (DI)(AX*4), R10
	VFMADD231PS (R10), Y8, Y0
	VFMADD231PS (R10), Y9, Y1
	VFMADD231PS (R10)(R12*1), Y8, Y2
	VFMADD231PS (R10)(R12*1), Y9, Y3
	VFMADD231PS (R10)(R12*2), Y8, Y4
	VFMADD231PS (R10)(R12*2), Y9, Y5
	VFMADD231PS (R10)(R14*1), Y8, Y6
	VFMADD231PS (R10)(R14*1), Y9, Y7
	ADDQ $8, AX
	CMPQ AX, R9
	JLT  d4h_inner
	// Sums in query order, two positions each: q0 q0 q1 q1, q2 q2 q3 q3.
	HSUM4R(Y0, Y1, Y2, Y3, X0, X1)
	VMOVLPS X0, (DX)
	VMOVHPS X0, (DX)(R13*1)
	HSUM4R(Y4, Y5, Y6, Y7, X4, X5)
	VMOVLPS X4, (DX)(R13*2)
	VMOVHPS X4, (DX)(R15*1)
	LEAQ (SI)(BX*2), SI
	ADDQ $8, DX
	SUBQ $2, CX
	CMPQ CX, $2
	JGE  d4h_loop

d4h_one:
	TESTQ CX, CX
	JZ    d4h_done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX

d4h1_inner:
	VCVTPH2PS (SI)(AX*2), Y8
	LEAQ (DI)(AX*4), R10
	VFMADD231PS (R10), Y8, Y0
	VFMADD231PS (R10)(R12*1), Y8, Y1
	VFMADD231PS (R10)(R12*2), Y8, Y2
	VFMADD231PS (R10)(R14*1), Y8, Y3
	ADDQ $8, AX
	CMPQ AX, R9
	JLT  d4h1_inner
	// One position: the sums are the four queries'.
	HSUM4R(Y0, Y1, Y2, Y3, X0, X1)
	VMOVSS     X0, (DX)
	VEXTRACTPS $1, X0, (DX)(R13*1)
	VEXTRACTPS $2, X0, (DX)(R13*2)
	VEXTRACTPS $3, X0, (DX)(R15*1)

d4h_done:
	VZEROUPPER
	RET

// func attnAccum4F16AVX2(p *float32, pstride int, v *uint16, vstride, hd, n int, out *float32, ostride int)
// attnAccum4F16AVX512 in sixteen Y registers: sixteen elements of the four
// queries' outputs a pass over the positions, each value row converted
// once for the four, one FMA per term in order of position. hd is a
// multiple of 16.
TEXT ·attnAccum4F16AVX2(SB), NOSPLIT, $0-64
	FOURARGS(p, pstride, v, vstride)
	TESTQ CX, CX
	JZ    a4h_done
	LEAQ (DI)(CX*4), CX // the end of query 0's probabilities
	XORQ AX, AX

a4h_chunk:
	CMPQ AX, R9
	JGE  a4h_done
	LEAQ (DX)(AX*4), R10
	VMOVUPS (R10), Y0
	VMOVUPS 32(R10), Y1
	VMOVUPS (R10)(R13*1), Y2
	VMOVUPS 32(R10)(R13*1), Y3
	VMOVUPS (R10)(R13*2), Y4
	VMOVUPS 32(R10)(R13*2), Y5
	VMOVUPS (R10)(R15*1), Y6
	VMOVUPS 32(R10)(R15*1), Y7
	MOVQ DI, R11
	LEAQ (SI)(AX*2), R8

a4h_loop:
	VCVTPH2PS (R8), Y8
	VCVTPH2PS 16(R8), Y9
	VBROADCASTSS (R11), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (R11)(R12*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VBROADCASTSS (R11)(R12*2), Y10
	VFMADD231PS Y8, Y10, Y4
	VFMADD231PS Y9, Y10, Y5
	VBROADCASTSS (R11)(R14*1), Y11
	VFMADD231PS Y8, Y11, Y6
	VFMADD231PS Y9, Y11, Y7
	ADDQ $4, R11
	ADDQ BX, R8
	CMPQ R11, CX
	JLT  a4h_loop
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	VMOVUPS Y2, (R10)(R13*1)
	VMOVUPS Y3, 32(R10)(R13*1)
	VMOVUPS Y4, (R10)(R13*2)
	VMOVUPS Y5, 32(R10)(R13*2)
	VMOVUPS Y6, (R10)(R15*1)
	VMOVUPS Y7, 32(R10)(R15*1)
	ADDQ $16, AX
	JMP  a4h_chunk

a4h_done:
	VZEROUPPER
	RET
