//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows_amd64.h"
#include "int8rowsk_amd64.h"

// The row-lane kernels of the super-block formats (int8rows.go): IQ4_XS,
// Q2_K, Q3_K, Q4_K, Q5_K and Q6_K against q8_K activations, their data and shared
// macros in int8rows_amd64.s and .h.

// func iq4xsRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// IQ4_XS against q8_K activations (nb super-blocks of 256; d: a scale per
// 256 values, nsum: a negated sum per 32, so 8*dstride of them a token).
// Per 32-value sub-block as IQ4_NL's, its integer times the sub-block's
// 6-bit scale less 32 summed exactly over the super-block (in acc's second
// half, 16 words a token); then acc = acc + (d_a * d_w) * S.
TEXT ·iq4xsRows16VNNI(SB), NOSPLIT, $16-96
	R16SETUP(·r16iota(SB))
	KSACC
iq4xs_zero:
	VMOVDQU32 Z19, (R13)
	ADDQ $64, R13
	DECQ R12
	JNZ  iq4xs_zero
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 ·iq4nlu8(SB), Z28
	MOVL $0x0f, AX
	VPBROADCASTD AX, Z25
	MOVL $3, AX
	VPBROADCASTD AX, Z26
	MOVL $32, AX
	VPBROADCASTD AX, Z27

iq4xs_sb:
	// Z20: the rows' d; Z30: their scales_h; Z29: scales_l.
	KXNORW K2, K2, K2
	VPGATHERDD (SI)(Z17*1), K2, Z30
	VPMOVDW    Z30, Y20
	VCVTPH2PS  Y20, Z20
	VPSRLD     $16, Z30, Z30
	KXNORW K3, K3, K3
	VPGATHERDD 4(SI)(Z17*1), K3, Z29
	MOVQ $8, ib-16(SP)

iq4xs_ib:
	R16PF(272)
	R16NIBBLES(8)
	R16GRID
	// Z31: this sub-block's scale less 32, per row.
	VPANDD Z25, Z29, Z31
	VPANDD Z26, Z30, Z0
	VPSLLD $4, Z0, Z0
	VPORD  Z0, Z31, Z31
	VPSUBD Z27, Z31, Z31
	VPSRLD $4, Z29, Z29
	VPSRLD $2, Z30, Z30
	MOVQ DI, R13
	MOVQ R8, R10
	KSTOKS

iq4xs_tok:
	VPBROADCASTD    (R10), Z21
	VPSLLD          $7, Z21, Z21
	R16DOT8(Z21)
	VPMULLD         Z31, Z21, Z21
	VPADDD          (AX), Z21, Z21
	VMOVDQU32       Z21, (AX)
	ADDQ BX, R13
	LEAQ (R10)(R9*8), R10
	ADDQ $64, AX
	DECQ R12
	JNZ  iq4xs_tok

	ADDQ $16, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ ib-16(SP)
	JNZ  iq4xs_ib

	// The super-block's float step, and its sums cleared for the next.
	ADDQ $8, SI
	MOVQ DX, R14
	KSACC

iq4xs_fl:
	VCVTDQ2PS   (R13), Z21
	VMOVDQU32   Z19, (R13)
	VMULPS.BCST (R14), Z20, Z22
	VMULPS      Z22, Z21, Z21
	VADDPS      (AX), Z21, Z21
	VMOVUPS     Z21, (AX)
	ADDQ R9, R14
	ADDQ $64, AX
	ADDQ $64, R13
	DECQ R12
	JNZ  iq4xs_fl

	ADDQ $4, DX
	DECQ CX
	JNZ  iq4xs_sb
	R16OUT

// Q4_K (144-byte super-blocks: d, dmin, twelve bytes of 6-bit scales and
// mins, 128 bytes of nibbles: chunk p's low nibbles are sub-block 2p, its
// high ones 2p+1) against q8_K activations. Per super-block and token the
// exact integers S = sum of scale_j p_j and M = sum of min_j times minus
// sub-block j's activation sum (acc's second part: S then M, 32 words a
// token); then acc = acc + (d_a d) S, then + (d_a dmin) M (dotQ4KRowGo).

// func q4kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q4kRows16VNNI(SB), NOSPLIT, $264-96
	KSETUP(q4k_zero)

q4k_sb:
	KSC16(0, Z28)
	KDMIN
	VMOVDQU64 64(SP), Z29
	VMOVDQU64 128(SP), Z30
	VMOVDQU64 192(SP), Z31
	Q4KSCLO(0, Z29, Z30, Z24, Z26)
	Q4KSCLO(1, Z29, Z30, Z25, Z27)
	Q4KCHUNK(0, q4k_t0)
	Q4KSCLO(2, Z29, Z30, Z24, Z26)
	Q4KSCLO(3, Z29, Z30, Z25, Z27)
	Q4KCHUNK(1, q4k_t1)
	Q4KSCHI(0, Z29, Z30, Z31, Z28, Z24, Z26)
	Q4KSCHI(1, Z29, Z30, Z31, Z28, Z25, Z27)
	Q4KCHUNK(2, q4k_t2)
	Q4KSCHI(2, Z29, Z30, Z31, Z28, Z24, Z26)
	Q4KSCHI(3, Z29, Z30, Z31, Z28, Z25, Z27)
	Q4KCHUNK(3, q4k_t3)

	KFLOAT(q4k_fl)

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q4k_sb
	R16OUT

// Q6_K (210-byte super-blocks: ql[128], qh[64], sixteen int8 scales, d)
// against q8_K activations; nsum is their 16-sums (int16, q8KActs.bs).
// Half h's values 128h+l, +32, +64, +96 are ql[64h+l] and ql[64h+32+l]'s
// low then high nibbles with qh[32h+l]'s bit pairs 0-3 as bits 4-5. Per
// 16-value sub-block j its unsigned values' integer less 32 times the
// activations' sum, times scale_j, summed exactly into S (acc's second
// part, 16 words a token); then acc = acc + (d_a d) S (dotQ6KGo).

// func q6kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q6kRows16VNNI(SB), NOSPLIT, $264-96
	R16SETUP(·r16perm(SB))
	SZERO(q6k_zero)
	// Words (-32, 0): VPMADDWD of a broadcast 16-sum gives -32 times it.
	MOVL $0x0000ffe0, AX
	VPBROADCASTD AX, Z16

q6k_sb:
	KSC16(192, Z18)
	Q6KHALF(0, q6k_t0, q6k_t1)
	Q6KHALF(1, q6k_t2, q6k_t3)

	// d: the high half of the dword at 206 (208's would read past the
	// matrix).
	SFLOAT(206, q6k_fl)

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q6k_sb
	VMOVDQU32 ·r16perm(SB), Z18
	R16OUT

// Q5_K (176-byte super-blocks: Q4_K's d, dmin and scales, 32 bytes of
// fifth bits, 128 of nibbles): as Q4_K, with value l of sub-block j having
// bit j of qh[l] as its fifth (dotQ5KRowGo). qh is transposed once per
// super-block and held; the scale bytes are gathered again per chunk.

// func q5kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q5kRows16VNNI(SB), NOSPLIT, $264-96
	KSETUP(q5k_zero)

q5k_sb:
	KSC16(0, Z18)
	R16LOAD32(16)
	VMOVDQA64 Z8, Z18
	VMOVDQA64 Z9, Z19
	VMOVDQA64 Z10, Z20
	VMOVDQA64 Z11, Z23
	VMOVDQA64 Z12, Z24
	VMOVDQA64 Z13, Z25
	VMOVDQA64 Z14, Z26
	VMOVDQA64 Z15, Z27
	KSCALEBYTES
	Q4KSCLO(0, Z0, Z1, Z28, Z30)
	Q4KSCLO(1, Z0, Z1, Z29, Z31)
	Q5KCHUNK(0, q5k_t0, 4, 3)
	KSCALEBYTES
	Q4KSCLO(2, Z0, Z1, Z28, Z30)
	Q4KSCLO(3, Z0, Z1, Z29, Z31)
	Q5KCHUNK(1, q5k_t1, 2, 1)
	KSCALEBYTES
	Q4KSCHI(0, Z0, Z1, Z2, Z3, Z28, Z30)
	Q4KSCHI(1, Z0, Z1, Z2, Z3, Z29, Z31)
	Q5KCHUNK(2, q5k_t2, 0, 31)
	KSCALEBYTES
	Q4KSCHI(2, Z0, Z1, Z2, Z3, Z28, Z30)
	Q4KSCHI(3, Z0, Z1, Z2, Z3, Z29, Z31)
	Q5KCHUNK(3, q5k_t3, 30, 29)

	KDMIN
	VPXORD Z19, Z19, Z19
	KFLOAT(q5k_fl)

	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q5k_sb
	VMOVDQU32 ·r16perm(SB), Z18
	R16OUT

// Q3_K (110-byte super-blocks: hmask[32], qs[64], twelve bytes of 6-bit
// scales, d) against q8_K activations; nsum is their 16-sums (int16, as
// Q6_K's). Half h's shift s is groups 8h+2s and 8h+2s+1: the 2-bit levels
// (qs[32h+i] >> 2s) & 3 with bit 4h+s of hmask[i] as their third, values
// 128h+32s+i. Per group its integer less 4 times the activations' sum,
// times its scale less 32, summed exactly into S; then acc + (d_a d) S
// (dotQ3KGo). hmask and the scale bytes (Z16, Z18, Z19) are held for the
// super-block.

// func q3kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q3kRows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16perm(SB))
	SZERO(q3k_zero)

q3k_sb:
	KHOLD32(0)
	KXNORW K2, K2, K2
	VPGATHERDD 96(SI)(Z17*1), K2, Z16
	KXNORW K2, K2, K2
	VPGATHERDD 100(SI)(Z17*1), K2, Z18
	KXNORW K2, K2, K2
	VPGATHERDD 104(SI)(Z17*1), K2, Z19
	Q3KHALF(0, 2, 1, 0, 31, 0, 8, 16, 24, 0, 8, 16, 24, 0, 8, 16, 24, q3k_t0, q3k_t1, q3k_t2, q3k_t3)
	Q3KHALF(1, 30, 29, 28, 27, 4, 12, 20, 28, 4, 12, 20, 28, 4, 12, 20, 28, q3k_t4, q3k_t5, q3k_t6, q3k_t7)

	// d: the high half of the dword at 106.
	SFLOAT(106, q3k_fl)

	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q3k_sb
	VMOVDQU32 ·r16perm(SB), Z18
	R16OUT

// Q2_K (84-byte super-blocks: sixteen bytes of 4-bit scale and min, qs[64],
// d, dmin) against q8_K activations; nsum is their 16-sums (int16). Chunk
// (h, q) is groups 8h+4q..8h+4q+3: levels (qs[32h+i] >> 4q) & 3 and
// (>> 4q+2) & 3, values 128h+64q+i and +32. Per group its integer times
// its scale, summed exactly into S; at the super-block's end per token
// C = the mins times the 16-sums (VPDPWSSD on min pairs), then
// acc + (d_a d) S - (d_a dmin) C (dotQ2KGo).

// func q2kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q2kRows16VNNI(SB), NOSPLIT, $264-96
	R16SETUP(·r16perm(SB))
	SZERO(q2k_zero)

q2k_sb:
	KSC16(0, Z16)
	Q2KHALF(0, q2k_t0, q2k_t1)
	Q2KHALF(1, q2k_t2, q2k_t3)
	Q2KFLOAT(q2k_fl)

	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q2k_sb
	VMOVDQU32 ·r16perm(SB), Z18
	R16OUT
