//go:build amd64 && !purego

#include "textflag.h"

// The row-lane int8 kernels (int8rows.go), AVX512-VNNI: sixteen rows at
// once, lane j holding one row's sum. Per block each row's bytes are
// loaded and transposed so that vector v holds, for every row, the four
// weights that meet activation bytes 4v..4v+3; a token then costs eight
// VPDPBUSD against its activations' dwords broadcast, and one float
// epilogue for sixteen rows. Weights are unsigned (Q8_0's biased by 128,
// Q4_0's nibbles by 8); the offset times the block's activation sum comes
// off through nsum (minus the sum), so a lane's integer is exact, and
// acc = acc + p * (d_w * d_a) per block, in block order.

// r16perm: the lane order Q8_0's transposition leaves (rows 0-3, 8-11,
// 4-7, 12-15; its own inverse), used to gather its scales and to store.
DATA r16perm<>+0(SB)/8, $0x0000000100000000
DATA r16perm<>+8(SB)/8, $0x0000000300000002
DATA r16perm<>+16(SB)/8, $0x0000000900000008
DATA r16perm<>+24(SB)/8, $0x0000000b0000000a
DATA r16perm<>+32(SB)/8, $0x0000000500000004
DATA r16perm<>+40(SB)/8, $0x0000000700000006
DATA r16perm<>+48(SB)/8, $0x0000000d0000000c
DATA r16perm<>+56(SB)/8, $0x0000000f0000000e
GLOBL r16perm<>(SB), RODATA|NOPTR, $64

// iq4nlu8: IQ4_NL's grid plus 128, as unsigned bytes.
DATA iq4nlu8<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4nlu8<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4nlu8<>(SB), RODATA|NOPTR, $16

DATA r16c63<>+0(SB)/4, $63
GLOBL r16c63<>(SB), RODATA|NOPTR, $4
DATA r16c15<>+0(SB)/4, $15
GLOBL r16c15<>(SB), RODATA|NOPTR, $4
DATA r16c3<>+0(SB)/4, $3
GLOBL r16c3<>(SB), RODATA|NOPTR, $4
DATA r16c0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL r16c0f<>(SB), RODATA|NOPTR, $4
DATA r16c30<>+0(SB)/4, $0x30303030
GLOBL r16c30<>(SB), RODATA|NOPTR, $4
DATA r16c10<>+0(SB)/4, $0x10101010
GLOBL r16c10<>(SB), RODATA|NOPTR, $4

// r16iota: rows in order (Q4_0's transposition).
DATA r16iota<>+0(SB)/8, $0x0000000100000000
DATA r16iota<>+8(SB)/8, $0x0000000300000002
DATA r16iota<>+16(SB)/8, $0x0000000500000004
DATA r16iota<>+24(SB)/8, $0x0000000700000006
DATA r16iota<>+32(SB)/8, $0x0000000900000008
DATA r16iota<>+40(SB)/8, $0x0000000b0000000a
DATA r16iota<>+48(SB)/8, $0x0000000d0000000c
DATA r16iota<>+56(SB)/8, $0x0000000f0000000e
GLOBL r16iota<>(SB), RODATA|NOPTR, $64

#include "int8rows_amd64.h"

// func q80Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Rows w, w+rb, ..., w+15rb; token t's activations at qs+t*qstride, its
// block scales and negated sums at d and nsum + t*dstride (elements); acc:
// 16*ntok floats of scratch; out[t*ostride+j]: row j's result for token t.
TEXT ·q80Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16perm<>(SB))
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z16

q80_block:
	R16PF9(544)
	R16LOAD32(2)
	VPXORD Z16, Z8, Z8
	VPXORD Z16, Z9, Z9
	VPXORD Z16, Z10, Z10
	VPXORD Z16, Z11, Z11
	VPXORD Z16, Z12, Z12
	VPXORD Z16, Z13, Z13
	VPXORD Z16, Z14, Z14
	VPXORD Z16, Z15, Z15
	R16SCALES
	R16TOKENS(7)
	R16STEP(34)
	JNZ  q80_block
	R16OUT

// func q40Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// As q80Rows16VNNI for Q4_0 rows (18-byte blocks: scale, 16 bytes of
// nibbles), lanes in row order; the offset is 8.
TEXT ·q40Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
q40_block:
	R16PF(288)
	R16NIBBLES(2)
	R16SCALES
	R16TOKENS(3)
	R16STEP(18)
	JNZ  q40_block
	R16OUT

// func iq4nlRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// IQ4_NL: Q4_0's layout, each nibble an index into the grid, which
// VPSHUFB looks up (iq4nlu8: the grid plus 128); the offset is 128.
TEXT ·iq4nlRows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 iq4nlu8<>(SB), Z28
iq4nl_block:
	R16PF(288)
	R16NIBBLES(2)
	R16GRID
	R16SCALES
	R16TOKENS(7)
	R16STEP(18)
	JNZ  iq4nl_block
	R16OUT

// func q41Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Q4_1 (20-byte blocks: scale, min, nibbles): unsigned values, then the
// min times the activations' sum.
TEXT ·q41Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
q41_block:
	R16PF(320)
	R16NIBBLES(4)
	R16SCALESMIN
	R16TOKENSMIN
	R16STEP(20)
	JNZ  q41_block
	R16OUT

// func q50Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Q5_0 (22-byte blocks: scale, 32 fifth bits, nibbles); the offset is 16.
TEXT ·q50Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	R16FIFTHSETUP
q50_block:
	R16PF(352)
	R16NIBBLES(6)
	R16FIFTH(2)
	R16SCALES
	R16TOKENS(4)
	R16STEP(22)
	JNZ  q50_block
	R16OUT

// func q51Rows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// Q5_1 (24-byte blocks: scale, min, fifth bits, nibbles).
TEXT ·q51Rows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16iota<>(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	R16FIFTHSETUP
q51_block:
	R16PF(384)
	R16NIBBLES(8)
	R16FIFTH(4)
	R16SCALESMIN
	R16TOKENSMIN
	R16STEP(24)
	JNZ  q51_block
	R16OUT

// func iq4xsRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// IQ4_XS against q8_K activations (nb super-blocks of 256; d: a scale per
// 256 values, nsum: a negated sum per 32, so 8*dstride of them a token).
// Per 32-value sub-block as IQ4_NL's, its integer times the sub-block's
// 6-bit scale less 32 summed exactly over the super-block (in acc's second
// half, 16 words a token); then acc = acc + (d_a * d_w) * S.
TEXT ·iq4xsRows16VNNI(SB), NOSPLIT, $16-96
	R16SETUP(r16iota<>(SB))
	MOVQ ntok+64(FP), R12
	MOVQ R12, R13
	SHLQ $6, R13
	ADDQ acc+72(FP), R13
iq4xs_zero:
	VMOVDQU32 Z19, (R13)
	ADDQ $64, R13
	DECQ R12
	JNZ  iq4xs_zero
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 iq4nlu8<>(SB), Z28
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
	MOVQ ntok+64(FP), R12
	MOVQ R12, AX
	SHLQ $6, AX
	ADDQ acc+72(FP), AX

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
	MOVQ acc+72(FP), AX
	MOVQ ntok+64(FP), R12
	MOVQ R12, R13
	SHLQ $6, R13
	ADDQ AX, R13

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
TEXT ·q4kRows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16perm<>(SB))
	KZERO(q4k_zero)
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16

q4k_sb:
	R16SCALESMIN
	KSCALEBYTES
	VMOVDQA64 Z0, Z29
	VMOVDQA64 Z1, Z30
	VMOVDQA64 Z2, Z31
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
TEXT ·q6kRows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16perm<>(SB))
	MOVQ ntok+64(FP), R12
	MOVQ acc+72(FP), R13
	MOVQ R12, AX
	SHLQ $6, AX
	ADDQ AX, R13
q6k_zero:
	VMOVDQU32 Z19, (R13)
	ADDQ $64, R13
	DECQ R12
	JNZ  q6k_zero
	// Words (-32, 0): VPMADDWD of a broadcast 16-sum gives -32 times it.
	MOVL $0x0000ffe0, AX
	VPBROADCASTD AX, Z16

q6k_sb:
	Q6KHALF(0, q6k_t0, q6k_t1)
	Q6KHALF(1, q6k_t2, q6k_t3)

	// The super-block's float step (d: the high half of the dword at 206,
	// not 208, which would read past the matrix), and S cleared.
	KXNORW K2, K2, K2
	VPGATHERDD 206(SI)(Z17*1), K2, Z20
	VPSRLD     $16, Z20, Z20
	VPMOVDW    Z20, Y20
	VCVTPH2PS  Y20, Z20
	VPXORD     Z19, Z19, Z19
	MOVQ DX, R14
	MOVQ acc+72(FP), AX
	MOVQ ntok+64(FP), R12
	MOVQ R12, R13
	SHLQ $6, R13
	ADDQ AX, R13
q6k_fl:
	VCVTDQ2PS   (R13), Z21
	VMULPS.BCST (R14), Z20, Z22
	VMULPS      Z22, Z21, Z21
	VADDPS      (AX), Z21, Z21
	VMOVUPS     Z21, (AX)
	VMOVDQU32   Z19, (R13)
	ADDQ R9, R14
	ADDQ $64, AX
	ADDQ $64, R13
	DECQ R12
	JNZ  q6k_fl

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q6k_sb
	VMOVDQU32 r16perm<>(SB), Z18
	R16OUT

// Q5_K (176-byte super-blocks: Q4_K's d, dmin and scales, 32 bytes of
// fifth bits, 128 of nibbles): as Q4_K, with value l of sub-block j having
// bit j of qh[l] as its fifth (dotQ5KRowGo). qh is transposed once per
// super-block and held; the scale bytes are gathered again per chunk.

// func q5kRows16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q5kRows16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(r16perm<>(SB))
	KZERO(q5k_zero)
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16

q5k_sb:
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

	R16SCALESMIN
	VPXORD Z19, Z19, Z19
	KFLOAT(q5k_fl)

	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $4, DX
	DECQ CX
	JNZ  q5k_sb
	VMOVDQU32 r16perm<>(SB), Z18
	R16OUT
