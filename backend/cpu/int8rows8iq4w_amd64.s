//go:build amd64 && !purego

#include "textflag.h"

#define R8X 9
#include "int8rows8_amd64.h"
#include "int8rows8iq4_amd64.h"

// iq4xsRows8AVX2W is iq4xsRows8AVX2 for four tokens or more, in 16
// bits: per super-block the rows' grid values (signed) times their
// sub-block's scale (at most 127 x 32, a word) are decoded once into scr,
// and each token's activations come widened to words (widenQ8AVX2), so
// VPMADDWD of the two sums pairs of products exactly, scaled, in 32 bits,
// with no 128s to take off. A token's dword per row pair (rows 0-3 and
// 4-7 apart) is summed over the super-block, then the pairs are added
// (VPHADDD): dotIQ4XSGo's integers, and its float step, so its bits.
// Per value and token: a VPMADDWD and a VPADDD, where VPMADDUBSW against
// split activations took two products, two adds and the scale after; but
// the values' decoding costs as much again, so single tokens (batch-1
// decode) stay on the split kernel, which reads at the bandwidth.
//
// scr (bytes): IQSCALES's (dwords 0, pairs 256, d 512), 832 the values
// times the scales: per sub-block ib, packed dword v, nibbles hi, 64
// bytes at 832+64(8ib+2v+hi), rows 0-3's four values as words then rows
// 4-7's; 4928 each token's eight float sums.

// iq4s: the grid (signed), in both lanes.
DATA iq4s<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4s<>+8(SB)/8, $0x7159453526190d01
DATA iq4s<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA iq4s<>+24(SB)/8, $0x7159453526190d01
GLOBL iq4s<>(SB), RODATA|NOPTR, $32

// iq4q03 and iq4q47: VPERMD indexes repeating rows 0-3's (4-7's) scale
// pairs twice, so each row's four words take its scale.
DATA iq4q03<>+0(SB)/8, $0x0000000000000000
DATA iq4q03<>+8(SB)/8, $0x0000000100000001
DATA iq4q03<>+16(SB)/8, $0x0000000200000002
DATA iq4q03<>+24(SB)/8, $0x0000000300000003
GLOBL iq4q03<>(SB), RODATA|NOPTR, $32
DATA iq4q47<>+0(SB)/8, $0x0000000400000004
DATA iq4q47<>+8(SB)/8, $0x0000000500000005
DATA iq4q47<>+16(SB)/8, $0x0000000600000006
DATA iq4q47<>+24(SB)/8, $0x0000000700000007
GLOBL iq4q47<>(SB), RODATA|NOPTR, $32

// WOFF(ib, v, hi): where IQWDEC left packed dword v's values (hi: its high
// nibbles') of sub-block ib.
#define WOFF(ib, v, hi) (832+64*(8*(ib)+2*(v)+(hi)))

// IQW1(ib, v, hi): grid bytes Y8 (eight rows' four values) widened, times
// the scales (Y2 rows 0-3, Y3 rows 4-7), into scr.
#define IQW1(ib, v, hi) \
	VEXTRACTI128 $1, Y8, X9 \
	VPMOVSXBW    X8, Y8 \
	VPMOVSXBW    X9, Y9 \
	VPMULLW      Y2, Y8, Y8 \
	VPMULLW      Y3, Y9, Y9 \
	VMOVDQU      Y8, WOFF(ib, v, hi)(R9) \
	VMOVDQU      Y9, (WOFF(ib, v, hi)+32)(R9)

// IQWV(ib, v): packed dword v of sub-block ib, both nibbles.
#define IQWV(ib, v) \
	VPAND   (64+32*(4*(ib)+(v)))(DI), Y15, Y8 \
	VPSHUFB Y8, Y14, Y8 \
	IQW1(ib, v, 0) \
	VMOVDQU (64+32*(4*(ib)+(v)))(DI), Y8 \
	VPSRLW  $4, Y8, Y8 \
	VPAND   Y15, Y8, Y8 \
	VPSHUFB Y8, Y14, Y8 \
	IQW1(ib, v, 1)

// IQWSUB(ib): sub-block ib's scales (pairs) for each row's four words,
// then its four packed dwords.
#define IQWSUB(ib) \
	VMOVDQU (256+32*(ib))(R9), Y3 \
	VPERMD  Y3, Y12, Y2 \
	VPERMD  Y3, Y13, Y3 \
	IQWV(ib, 0) \
	IQWV(ib, 1) \
	IQWV(ib, 2) \
	IQWV(ib, 3)

// IQWDEC: the super-block's values times their scales into scr.
#define IQWDEC \
	VMOVDQU ·r8nib(SB), Y15 \
	VMOVDQU iq4s<>(SB), Y14 \
	VMOVDQU iq4q03<>(SB), Y12 \
	VMOVDQU iq4q47<>(SB), Y13 \
	IQWSUB(0) \
	IQWSUB(1) \
	IQWSUB(2) \
	IQWSUB(3) \
	IQWSUB(4) \
	IQWSUB(5) \
	IQWSUB(6) \
	IQWSUB(7)

// W1(a, lo, hi): the values in Y8 (rows 0-3) and Y9 (4-7) by the token's
// four words at a, broadcast, added to lo and hi (Y10, Y11 clobbered).
#define W1(a, lo, hi) \
	VPBROADCASTQ a, Y10 \
	VPMADDWD     Y10, Y8, Y11 \
	VPADDD       Y11, lo, lo \
	VPMADDWD     Y10, Y9, Y10 \
	VPADDD       Y10, hi, hi

// WLD(ib, v, hi) loads the values into Y8 and Y9; WAOFF is where the
// token's four words for them sit.
#define WLD(ib, v, hi) \
	VMOVDQU WOFF(ib, v, hi)(R9), Y8 \
	VMOVDQU (WOFF(ib, v, hi)+32)(R9), Y9

#define WAOFF(ib, v, hi) (64*(ib)+32*(hi)+8*(v))

// W4(ib, v, hi) and W1T(ib, v, hi): the values against four tokens (BX,
// BX+R8, R11, R11+R8: rows 0-3 into Y0-Y3, 4-7 into Y4-Y7), or one (BX:
// Y0, Y4).
#define W4(ib, v, hi) \
	WLD(ib, v, hi) \
	W1(WAOFF(ib, v, hi)(BX), Y0, Y4) \
	W1(WAOFF(ib, v, hi)(BX)(R8*1), Y1, Y5) \
	W1(WAOFF(ib, v, hi)(R11), Y2, Y6) \
	W1(WAOFF(ib, v, hi)(R11)(R8*1), Y3, Y7)

#define W1T(ib, v, hi) \
	WLD(ib, v, hi) \
	W1(WAOFF(ib, v, hi)(BX), Y0, Y4)

// WALL(W): the super-block's value vectors by W (T8V a sub-block).
#define WALL(W) \
	T8V(W, 0) \
	T8V(W, 1) \
	T8V(W, 2) \
	T8V(W, 3) \
	T8V(W, 4) \
	T8V(W, 5) \
	T8V(W, 6) \
	T8V(W, 7)

// WPAIRS(lo, hi): a token's row-pair sums (lo: rows 0-3, hi: 4-7) added
// into eight rows' dwords in hi.
#define WPAIRS(lo, hi) \
	VPHADDD hi, lo, hi \
	VPERMQ  $0xd8, hi, hi

// IQWEND(S, acc): a token's super-block, S its integers.
#define IQWEND(S, acc) F8END(512, S, acc)

// func iq4xsRows8AVX2W(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
//
// The frame of int8rows8_amd64.h, qs the widened activations (two bytes
// a value).
TEXT ·iq4xsRows8AVX2W(SB), NOSPLIT, $0-80
	R8ARGS(zero, 4928)

block:
	R8PF
	IQSCALES
	IQWDEC
	R8TOKS(4928)
	CMPQ R10, $4
	JLT  one

four:
	LEAQ  (BX)(R8*2), R11
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	WALL(W4)
	WPAIRS(Y0, Y4)
	WPAIRS(Y1, Y5)
	WPAIRS(Y2, Y6)
	WPAIRS(Y3, Y7)
	R8LOOP4(IQWEND)
	R8ONE
	VPXOR Y0, Y0, Y0
	VPXOR Y4, Y4, Y4
	WALL(W1T)
	WPAIRS(Y0, Y4)
	R8DONE1(IQWEND)
	JNZ onetok

next:
	R8NEXT(1088, block)
	ROWS8OUT(write, 4928)

// func widenQ8AVX2(qs, out *int8, n int)
//
// q8 values (n, a multiple of 32) as little-endian words into out.
TEXT ·widenQ8AVX2(SB), NOSPLIT, $0-24
	MOVQ qs+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	JZ   widendone

widen:
	VPMOVSXBW (SI), Y0
	VPMOVSXBW 16(SI), Y1
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       widen

widendone:
	VZEROUPPER
	RET
