//go:build amd64 && !purego

#include "textflag.h"

// Row-major kernels for Q4_K, Q5_K and Q6_K at one or two tokens (decode),
// on the sixteen-row kernels' contract (rows16Kernel, ntok 1 or 2): each
// row read straight through, a super-block's values assembled into four
// vectors in the activations' order and VPDPBUSD'd against each token's.
// The row-lane kernels gather sixteen rows a dword at a time and transpose
// them: on cached data they are the cheaper (2.2 against 4.1 ns a row's
// Q4_K super-block), but their sixteen streams overlap badly with the
// memory, and at batch 1 on wide rows (Gemma-3's 2560 columns) they ran at
// 70-75% of the read bandwidth, these at 97-99%. At three tokens the row
// lanes share their transposes enough to win again (fewTokens).
//
// Two super-blocks go together: their sums are reduced together (VPHADDD)
// and their float steps run as one vector, then add to the row's sums (X22
// for token 0, X23 for token 1) in order. Two rows interleaved instead ran at half the speed: one
// stream a row is what the prefetchers follow.
//
// A dword of a VPDPBUSD sum is four products of 6-bit (or 4, 5-bit) values
// by q8_K activations (within ±127), at most 4 x 63 x 127 = 32,004, so
// one VPMADDWD by the sub-block's scale as the low word of a dword (high
// word zero) gives it times the scale exactly; likewise the 16-sums (Q6_K)
// and negated 32-sums (Q4_K, at most 32 x 127) times their scale and min.
// The sums are the Go loops' integers and the float step is theirs, in
// their order (dotQ6KGo, dotQ4KRowGo, dotQ5KRowGo).

// Vector k's dword i takes sub-block 4k+i/4's scale (Q6_K, 16 values a
// sub-block) or 2k+i/8's (Q4_K, 32): VPERMD indices as bytes.
DATA fewq6idx<>+0(SB)/8, $0x0101010100000000
DATA fewq6idx<>+8(SB)/8, $0x0303030302020202
DATA fewq6idx<>+16(SB)/8, $0x0505050504040404
DATA fewq6idx<>+24(SB)/8, $0x0707070706060606
DATA fewq6idx<>+32(SB)/8, $0x0909090908080808
DATA fewq6idx<>+40(SB)/8, $0x0b0b0b0b0a0a0a0a
DATA fewq6idx<>+48(SB)/8, $0x0d0d0d0d0c0c0c0c
DATA fewq6idx<>+56(SB)/8, $0x0f0f0f0f0e0e0e0e
GLOBL fewq6idx<>(SB), RODATA|NOPTR, $64
DATA fewq4idx<>+0(SB)/8, $0x0000000000000000
DATA fewq4idx<>+8(SB)/8, $0x0101010101010101
DATA fewq4idx<>+16(SB)/8, $0x0202020202020202
DATA fewq4idx<>+24(SB)/8, $0x0303030303030303
DATA fewq4idx<>+32(SB)/8, $0x0404040404040404
DATA fewq4idx<>+40(SB)/8, $0x0505050505050505
DATA fewq4idx<>+48(SB)/8, $0x0606060606060606
DATA fewq4idx<>+56(SB)/8, $0x0707070707070707
GLOBL fewq4idx<>(SB), RODATA|NOPTR, $64

// Qword shift counts, the low four qwords then the high four: Q6_K's qh
// bit pairs moved to bits 4-5 for a vector's first and second 32 values
// (fewshl for the low nibbles' pairs, fewshr for the high ones'), and
// Q4_K's chunk broadcast to both halves as its low then high nibbles.
DATA fewshl<>+0(SB)/8, $4
DATA fewshl<>+8(SB)/8, $4
DATA fewshl<>+16(SB)/8, $4
DATA fewshl<>+24(SB)/8, $4
DATA fewshl<>+32(SB)/8, $2
DATA fewshl<>+40(SB)/8, $2
DATA fewshl<>+48(SB)/8, $2
DATA fewshl<>+56(SB)/8, $2
GLOBL fewshl<>(SB), RODATA|NOPTR, $64
DATA fewshr<>+0(SB)/8, $0
DATA fewshr<>+8(SB)/8, $0
DATA fewshr<>+16(SB)/8, $0
DATA fewshr<>+24(SB)/8, $0
DATA fewshr<>+32(SB)/8, $2
DATA fewshr<>+40(SB)/8, $2
DATA fewshr<>+48(SB)/8, $2
DATA fewshr<>+56(SB)/8, $2
GLOBL fewshr<>(SB), RODATA|NOPTR, $64
DATA fewnib<>+0(SB)/8, $0
DATA fewnib<>+8(SB)/8, $0
DATA fewnib<>+16(SB)/8, $0
DATA fewnib<>+24(SB)/8, $0
DATA fewnib<>+32(SB)/8, $4
DATA fewnib<>+40(SB)/8, $4
DATA fewnib<>+48(SB)/8, $4
DATA fewnib<>+56(SB)/8, $4
GLOBL fewnib<>(SB), RODATA|NOPTR, $64

// FEWSETUP(idx): DI the first row, R9 the rows left; Z31 low nibbles,
// Z24-Z27 the scale indices.
#define FEWSETUP(idx) \
	MOVQ         w+0(FP), DI \
	MOVQ         $16, R9 \
	MOVL         $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z31 \
	VPMOVZXBD    idx+0(SB), Z24 \
	VPMOVZXBD    idx+16(SB), Z25 \
	VPMOVZXBD    idx+32(SB), Z26 \
	VPMOVZXBD    idx+48(SB), Z27

// FEWROW starts a row: its sums zeroed, SI its first super-block, CX their
// count; BX, DX and R10 token 0's activations, scales and sums there.
#define FEWROW \
	VPXORD X22, X22, X22 \
	VPXORD X23, X23, X23 \
	MOVQ   DI, SI \
	MOVQ   nb+56(FP), CX \
	MOVQ   qs+16(FP), BX \
	MOVQ   d+24(FP), DX \
	MOVQ   nsum+32(FP), R10

// FEWTOK1: R12, R14 and R13 token 1's activations, scales and sums at the
// row's first super-block.
#define FEWTOK1 \
	MOVQ qstride+40(FP), R12 \
	ADDQ BX, R12 \
	MOVQ dstride+48(FP), R14 \
	LEAQ (DX)(R14*4), R14 \
	MOVQ nb+56(FP), R13 \
	SHLQ $5, R13 \
	ADDQ R10, R13

// FEWDOT(x): Z14 = the four value vectors Z0-Z3 against the activations at
// x, each dword times its scale (Z8-Z11).
#define FEWDOT(x) \
	VPXORD   Z14, Z14, Z14 \
	VPXORD   Z15, Z15, Z15 \
	VPXORD   Z16, Z16, Z16 \
	VPXORD   Z17, Z17, Z17 \
	VPDPBUSD 0(x), Z0, Z14 \
	VPDPBUSD 64(x), Z1, Z15 \
	VPDPBUSD 128(x), Z2, Z16 \
	VPDPBUSD 192(x), Z3, Z17 \
	VPMADDWD Z8, Z14, Z14 \
	VPMADDWD Z9, Z15, Z15 \
	VPMADDWD Z10, Z16, Z16 \
	VPMADDWD Z11, Z17, Z17 \
	VPADDD   Z15, Z14, Z14 \
	VPADDD   Z17, Z16, Z16 \
	VPADDD   Z16, Z14, Z14

// FEWNEXT(size) moves SI, BX and R10 to the next super-block (size
// bytes), prefetching the row's bytes (and the next rows') 6 KiB ahead:
// the hardware's prefetch alone held Gemma-3's batch 1 at 85% of the
// read bandwidth, 1.5 KiB ahead at 87-90%, 3 KiB at 96-97%, 6 KiB 97-99%
// (and 12 KiB no better). FEWNEXT2 moves token 1's R12 and R13 too.
#define FEWNEXT(size) \
	PREFETCHT0 6144(SI) \
	PREFETCHT0 6208(SI) \
	PREFETCHT0 6272(SI) \
	PREFETCHT0 6336(SI) \
	ADDQ $size, SI \
	ADDQ $256, BX \
	ADDQ $32, R10

#define FEWNEXT2(size) \
	FEWNEXT(size) \
	ADDQ $256, R12 \
	ADDQ $32, R13

// FEWLOOP(size, two, one, out) ends two super-blocks (DX to the next
// scales) and loops to two while two are left, to one if one is, else on
// to out; FEWLOOP2 for two tokens.
#define FEWLOOP(size, two, one, out) \
	FEWNEXT(size) \
	ADDQ $8, DX \
	FEWCOUNT(two, one, out)

#define FEWLOOP2(size, two, one, out) \
	FEWNEXT2(size) \
	ADDQ $8, DX \
	ADDQ $8, R14 \
	FEWCOUNT(two, one, out)

#define FEWCOUNT(two, one, out) \
	SUBQ  $2, CX \
	CMPQ  CX, $2 \
	JGE   two \
	TESTQ CX, CX \
	JNZ   one \
	JMP   out

// FEWOUT(row) stores the row's sum and loops to row while one is left;
// FEWOUT2 both tokens' (token 1's ostride on).
#define FEWOUT(row) \
	MOVQ   out+80(FP), R12 \
	VMOVSS X22, (R12) \
	FEWEND(row)

#define FEWOUT2(row) \
	MOVQ   out+80(FP), R12 \
	VMOVSS X22, (R12) \
	MOVQ   ostride+88(FP), R13 \
	VMOVSS X23, (R12)(R13*4) \
	FEWEND(row)

#define FEWEND(row) \
	ADDQ $4, out+80(FP) \
	ADDQ rb+8(FP), DI \
	DECQ R9 \
	JNZ  row \
	VZEROUPPER \
	RET

// FEWADD4(acc): acc = acc + X14's four lanes in order.
#define FEWADD4(acc) \
	VADDSS    X14, acc, acc \
	VMOVSHDUP X14, X15 \
	VADDSS    X15, acc, acc \
	VMOVHLPS  X14, X14, X15 \
	VADDSS    X15, acc, acc \
	VPSHUFD   $0xff, X14, X15 \
	VADDSS    X15, acc, acc

// Q6_K (210-byte super-blocks: ql[128], qh[64], sixteen int8 scales, d).
// Half h's values 128h+l, +32, +64, +96 are ql[64h+l] and ql[64h+32+l]'s
// low then high nibbles with qh[32h+l]'s bit pairs 0-3 as bits 4-5.

// Q6HALF(h, lo, hi): half h of the super-block into lo (its first 64
// values) and hi.
#define Q6HALF(h, lo, hi) \
	VMOVDQU64       (64*(h))(SI), Z4 \
	VBROADCASTI64X4 (128+32*(h))(SI), Z5 \
	VPSLLVQ         Z29, Z5, lo \
	VPANDD          Z30, lo, lo \
	VPTERNLOGD      $0xf8, Z31, Z4, lo \
	VPSRLVQ         Z28, Z5, hi \
	VPANDD          Z30, hi, hi \
	VPSRLW          $4, Z4, Z4 \
	VPTERNLOGD      $0xf8, Z31, Z4, hi

// Q6VALS: the super-block's values (Z0-Z3), scales by vector (Z8-Z11)
// and -32 times its scales as words (Y7).
#define Q6VALS \
	Q6HALF(0, Z0, Z1) \
	Q6HALF(1, Z2, Z3) \
	VPMOVSXBD 192(SI), Z7 \
	VPANDD    Z20, Z7, Z7 \
	VPERMD    Z7, Z24, Z8 \
	VPERMD    Z7, Z25, Z9 \
	VPERMD    Z7, Z26, Z10 \
	VPERMD    Z7, Z27, Z11 \
	VPMOVSXBW 192(SI), Y7 \
	VPMULLW   Y21, Y7, Y7

// Q6DOT(x, bs, R): R = S against the activations at x and their 16-sums
// at bs, as eight dwords.
#define Q6DOT(x, bs, R) \
	FEWDOT(x) \
	VPMADDWD      (bs), Y7, Y19 \
	VPADDD        Z19, Z14, Z14 \
	VEXTRACTI64X4 $1, Z14, Y15 \
	VPADDD        Y15, Y14, R

// Q6D2: X5 = the d of the super-block before SI and of SI's; Q6D1: SI's.
#define Q6D2 \
	VPBROADCASTW -2(SI), X5 \
	VPINSRW      $1, 208(SI), X5, X5 \
	VCVTPH2PS    X5, X5

#define Q6D1 \
	VPBROADCASTW 208(SI), X5 \
	VCVTPH2PS    X5, X5

// Q6FLOAT(RA, RB, da, acc): two super-blocks' S (RA, RB) for a token whose
// scales are at da: acc = acc + (d_a d) S for each, in order.
#define Q6FLOAT(RA, RB, da, acc) \
	VPHADDD      RB, RA, Y14 \
	VEXTRACTI128 $1, Y14, X15 \
	VPADDD       X15, X14, X14 \
	VPHADDD      X14, X14, X14 \
	VCVTDQ2PS    X14, X14 \
	VMOVQ        da, X15 \
	VMULPS       X5, X15, X15 \
	VMULPS       X14, X15, X14 \
	VADDSS       X14, acc, acc \
	VMOVSHDUP    X14, X15 \
	VADDSS       X15, acc, acc

// Q6ONE(RY, RX, da, acc): one super-block's.
#define Q6ONE(RY, RX, da, acc) \
	VEXTRACTI128 $1, RY, X15 \
	VPADDD       X15, RX, X14 \
	VPHADDD      X14, X14, X14 \
	VPHADDD      X14, X14, X14 \
	VCVTDQ2PS    X14, X14 \
	VMULSS       da, X5, X15 \
	VMULSS       X14, X15, X14 \
	VADDSS       X14, acc, acc

// func q6kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
//
// ntok 1 or 2; nsum: the activations' 16-sums (int16). Per super-block S
// = sum_j scale_j (sum of values times activations) - 32 sum_j scale_j
// bs_j; acc = acc + (d_a d) S.
TEXT ·q6kRowsFewVNNI(SB), NOSPLIT, $0-96
	FEWSETUP(fewq6idx<>)
	MOVL         $0x30303030, AX
	VPBROADCASTD AX, Z30
	VMOVDQU64    fewshl<>(SB), Z29
	VMOVDQU64    fewshr<>(SB), Z28
	MOVL         $0xffff, AX
	VPBROADCASTD AX, Z20
	MOVL         $0xffe0ffe0, AX
	VPBROADCASTD AX, Z21
	CMPQ         ntok+64(FP), $1
	JGT          q6f_row2

q6f_row:
	FEWROW
	CMPQ CX, $2
	JLT  q6f_one

q6f_two:
	Q6VALS
	Q6DOT(BX, R10, Y12)
	FEWNEXT(210)
	Q6VALS
	Q6DOT(BX, R10, Y13)
	Q6D2
	Q6FLOAT(Y12, Y13, (DX), X22)
	FEWLOOP(210, q6f_two, q6f_one, q6f_out)

q6f_one:
	Q6VALS
	Q6DOT(BX, R10, Y12)
	Q6D1
	Q6ONE(Y12, X12, (DX), X22)

q6f_out:
	FEWOUT(q6f_row)

q6f_row2:
	FEWROW
	FEWTOK1
	CMPQ CX, $2
	JLT  q6f_one2

q6f_two2:
	Q6VALS
	Q6DOT(BX, R10, Y12)
	Q6DOT(R12, R13, Y6)
	FEWNEXT2(210)
	Q6VALS
	Q6DOT(BX, R10, Y13)
	Q6DOT(R12, R13, Y4)
	Q6D2
	Q6FLOAT(Y12, Y13, (DX), X22)
	Q6FLOAT(Y6, Y4, (R14), X23)
	FEWLOOP2(210, q6f_two2, q6f_one2, q6f_out2)

q6f_one2:
	Q6VALS
	Q6DOT(BX, R10, Y12)
	Q6DOT(R12, R13, Y13)
	Q6D1
	Q6ONE(Y12, X12, (DX), X22)
	Q6ONE(Y13, X13, (R14), X23)

q6f_out2:
	FEWOUT2(q6f_row2)

// Q4_K (144-byte super-blocks: d, dmin, twelve bytes of 6-bit scales and
// mins, four chunks of 32 bytes whose low then high nibbles are sub-blocks
// 2c and 2c+1), against the activations' negated 32-sums.

// Q4CHUNK(c, Z): chunk c's 64 values into Z in order.
#define Q4CHUNK(c, Z) \
	VBROADCASTI64X4 (16+32*(c))(SI), Z \
	VPSRLVQ         Z28, Z, Z \
	VPANDD          Z31, Z, Z

// K4SCALES: the super-block's 6-bit scales and mins (quant.K4ScaleMins)
// as Z8-Z11, the scales by vector, and Y7, the mins. Of the twelve bytes'
// dwords u0 holds scales 0-3 and the top bits of 4-7, u1 the mins
// likewise, u2 the low nibbles of scales and mins 4-7: the dwords of
// scales and mins in X4 are [u0, u2, u1, u2>>4] masked, with [u0, u0, u1,
// u1]>>2's top bits in lanes 1 and 3.
#define K4SCALES \
	VMOVDQU       4(SI), X7 \
	VPSHUFD       $0x98, X7, X4 \
	VPSHUFD       $0x50, X7, X5 \
	VPSRLVD       fewk4shr<>(SB), X4, X4 \
	VPSRLD        $2, X5, X5 \
	VPANDD        fewk4lo<>(SB), X4, X4 \
	VPTERNLOGD    $0xf8, fewk4hi<>(SB), X5, X4 \
	VPMOVZXBD     X4, Z7 \
	VPERMD        Z7, Z24, Z8 \
	VPERMD        Z7, Z25, Z9 \
	VPERMD        Z7, Z26, Z10 \
	VPERMD        Z7, Z27, Z11 \
	VEXTRACTI64X4 $1, Z7, Y7

DATA fewk4shr<>+0(SB)/8, $0
DATA fewk4shr<>+8(SB)/8, $0x0000000400000000
GLOBL fewk4shr<>(SB), RODATA|NOPTR, $16
DATA fewk4lo<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA fewk4lo<>+8(SB)/8, $0x0f0f0f0f3f3f3f3f
GLOBL fewk4lo<>(SB), RODATA|NOPTR, $16
DATA fewk4hi<>+0(SB)/8, $0x3030303000000000
DATA fewk4hi<>+8(SB)/8, $0x3030303000000000
GLOBL fewk4hi<>(SB), RODATA|NOPTR, $16

// K4SM(x, ns, R): R = the super-block's S and M against the activations
// at x and their negated 32-sums at ns, VPHADDD'd as [s01 s23 m01 m23] in
// each lane.
#define K4SM(x, ns, R) \
	FEWDOT(x) \
	VPMADDWD      (ns), Y7, Y5 \
	VEXTRACTI64X4 $1, Z14, Y15 \
	VPADDD        Y15, Y14, Y14 \
	VPHADDD       Y5, Y14, R

// K4D2(size): X5 = d and dmin of the super-block before SI and of SI's;
// K4D1: SI's.
#define K4D2(size) \
	VMOVD     -size(SI), X5 \
	VPINSRD   $1, 0(SI), X5, X5 \
	VCVTPH2PS X5, X5

#define K4D1 \
	VMOVD     0(SI), X5 \
	VCVTPH2PS X5, X5

// K4FLOAT(RA, RB, da, acc): two super-blocks' S and M (RA, RB) for a token
// whose scales are at da: acc = acc + (d_a d) S, then acc + (d_a dmin) M,
// for each in order.
#define K4FLOAT(RA, RB, da, acc) \
	VPHADDD      RB, RA, Y14 \
	VEXTRACTI128 $1, Y14, X15 \
	VPADDD       X15, X14, X14 \
	VCVTDQ2PS    X14, X14 \
	VMOVQ        da, X15 \
	VUNPCKLPS    X15, X15, X15 \
	VMULPS       X5, X15, X15 \
	VMULPS       X14, X15, X14 \
	FEWADD4(acc)

// K4ONE(RY, RX, da, acc): one super-block's.
#define K4ONE(RY, RX, da, acc) \
	VEXTRACTI128 $1, RY, X15 \
	VPADDD       X15, RX, X14 \
	VPHADDD      X14, X14, X14 \
	VCVTDQ2PS    X14, X14 \
	VBROADCASTSS da, X15 \
	VMULPS       X5, X15, X15 \
	VMULPS       X14, X15, X14 \
	VADDSS       X14, acc, acc \
	VMOVSHDUP    X14, X15 \
	VADDSS       X15, acc, acc

// K4KERNEL(values, size, labels...): the loops of a kernel whose
// super-blocks (size bytes) values assembles, for one token and for two.
#define K4KERNEL(values, size, row, two, one, out, row2, two2, one2, out2) \
	CMPQ ntok+64(FP), $1 \
	JGT  row2 \
row: \
	FEWROW \
	CMPQ CX, $2 \
	JLT  one \
two: \
	values \
	K4SCALES \
	K4SM(BX, R10, Y12) \
	FEWNEXT(size) \
	values \
	K4SCALES \
	K4SM(BX, R10, Y13) \
	K4D2(size) \
	K4FLOAT(Y12, Y13, (DX), X22) \
	FEWLOOP(size, two, one, out) \
one: \
	values \
	K4SCALES \
	K4SM(BX, R10, Y12) \
	K4D1 \
	K4ONE(Y12, X12, (DX), X22) \
out: \
	FEWOUT(row) \
row2: \
	FEWROW \
	FEWTOK1 \
	CMPQ CX, $2 \
	JLT  one2 \
two2: \
	values \
	K4SCALES \
	K4SM(BX, R10, Y12) \
	K4SM(R12, R13, Y6) \
	FEWNEXT2(size) \
	values \
	K4SCALES \
	K4SM(BX, R10, Y13) \
	K4SM(R12, R13, Y4) \
	K4D2(size) \
	K4FLOAT(Y12, Y13, (DX), X22) \
	K4FLOAT(Y6, Y4, (R14), X23) \
	FEWLOOP2(size, two2, one2, out2) \
one2: \
	values \
	K4SCALES \
	K4SM(BX, R10, Y12) \
	K4SM(R12, R13, Y13) \
	K4D1 \
	K4ONE(Y12, X12, (DX), X22) \
	K4ONE(Y13, X13, (R14), X23) \
out2: \
	FEWOUT2(row2)

#define Q4VALUES \
	Q4CHUNK(0, Z0) \
	Q4CHUNK(1, Z1) \
	Q4CHUNK(2, Z2) \
	Q4CHUNK(3, Z3)

// func q4kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
//
// ntok 1 or 2; nsum: the activations' negated 32-sums. Per super-block S =
// sum_j scale_j (sum of values times activations), M = sum_j min_j nsum_j
// (dotQ4KRowGo).
TEXT ·q4kRowsFewVNNI(SB), NOSPLIT, $0-96
	FEWSETUP(fewq4idx<>)
	VMOVDQU64 fewnib<>(SB), Z28
	K4KERNEL(Q4VALUES, 144, q4f_row, q4f_two, q4f_one, q4f_out, q4f_row2, q4f_two2, q4f_one2, q4f_out2)

// Q5_K (176 bytes: Q4_K's d, dmin and scales, 32 bytes of fifth bits, then
// Q4_K's chunks): value l of sub-block j has bit j of qh[l] as its fifth
// (dotQ5KRowGo). Z29 holds qh in both halves; chunk c's fifth bits are
// its bits 2c (low half) and 2c+1, rotated to bit 4 (a shift would lose
// a qword's top byte's bits 4-7).
DATA fewq5rol<>+0(SB)/8, $4
DATA fewq5rol<>+8(SB)/8, $3
DATA fewq5rol<>+16(SB)/8, $2
DATA fewq5rol<>+24(SB)/8, $1
DATA fewq5rol<>+32(SB)/8, $0
DATA fewq5rol<>+40(SB)/8, $63
DATA fewq5rol<>+48(SB)/8, $62
DATA fewq5rol<>+56(SB)/8, $61
GLOBL fewq5rol<>(SB), RODATA|NOPTR, $64

// Q5CHUNK(c, cnt, Z): chunk c's 64 values into Z in order (cnt: its fifth
// bits' rotate counts).
#define Q5CHUNK(c, cnt, Z) \
	VPROLVQ         cnt, Z29, Z \
	VPANDD          Z30, Z, Z \
	VBROADCASTI64X4 (48+32*(c))(SI), Z5 \
	VPSRLVQ         Z28, Z5, Z5 \
	VPTERNLOGD      $0xf8, Z31, Z5, Z

#define Q5VALUES \
	VBROADCASTI64X4 16(SI), Z29 \
	Q5CHUNK(0, Z18, Z0) \
	Q5CHUNK(1, Z19, Z1) \
	Q5CHUNK(2, Z20, Z2) \
	Q5CHUNK(3, Z21, Z3)

// func q5kRowsFewVNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
TEXT ·q5kRowsFewVNNI(SB), NOSPLIT, $0-96
	FEWSETUP(fewq4idx<>)
	VMOVDQU64    fewnib<>(SB), Z28
	MOVL         $0x10101010, AX
	VPBROADCASTD AX, Z30
	// Z18-Z21: chunk c's counts, qwords 4-2c (low half) and 3-2c, mod 64.
	VPBROADCASTQ fewq5rol<>+0(SB), Z4
	VPBROADCASTQ fewq5rol<>+8(SB), Z5
	VSHUFI64X2   $0x44, Z5, Z4, Z18
	VPBROADCASTQ fewq5rol<>+16(SB), Z4
	VPBROADCASTQ fewq5rol<>+24(SB), Z5
	VSHUFI64X2   $0x44, Z5, Z4, Z19
	VPBROADCASTQ fewq5rol<>+32(SB), Z4
	VPBROADCASTQ fewq5rol<>+40(SB), Z5
	VSHUFI64X2   $0x44, Z5, Z4, Z20
	VPBROADCASTQ fewq5rol<>+48(SB), Z4
	VPBROADCASTQ fewq5rol<>+56(SB), Z5
	VSHUFI64X2   $0x44, Z5, Z4, Z21
	K4KERNEL(Q5VALUES, 176, q5f_row, q5f_two, q5f_one, q5f_out, q5f_row2, q5f_two2, q5f_one2, q5f_out2)
