//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows8_amd64.h"
#include "avxvnni_amd64.h"

// iq4xsRows8AVXVNNI: IQ4_XS rows packed eight to a group (packIQ4XS8)
// against q8_K activations on AVX-VNNI, each row in a dword lane:
// dotIQ4XSGo's integers and float step, so its bits. Per super-block the
// rows' 6-bit scales are decoded once into scr; per token each sub-block
// is eight VPDPBUSD of the values' grid entries plus 128 (a VPSHUFB of the
// nibbles, unsigned) by the token's activations broadcast, exact in 32
// bits, times the scale (VPMULLD); the 128s come off as 128 times the
// scales by the activations' 16-sums.
//
// scr (bytes): 0 the scales of sub-blocks 0-7 as dwords, 256 as 16-bit
// pairs, 512 d as floats, 576 each token's eight float sums.

// iq4u: the grid plus 128, in both lanes.
DATA iq4u<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4u<>+8(SB)/8, $0xf1d9c5b5a6998d81
DATA iq4u<>+16(SB)/8, $0x766a5d4f3f2d1801
DATA iq4u<>+24(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4u<>(SB), RODATA|NOPTR, $32

// iq4d: VPSHUFB mask gathering each lane's four low words (the d halves).
DATA iq4d<>+0(SB)/8, $0x0d0c090805040100
DATA iq4d<>+8(SB)/8, $0x8080808080808080
DATA iq4d<>+16(SB)/8, $0x0d0c090805040100
DATA iq4d<>+24(SB)/8, $0x8080808080808080
GLOBL iq4d<>(SB), RODATA|NOPTR, $32

DATA iq4c0f<>+0(SB)/4, $0x0f
GLOBL iq4c0f<>(SB), RODATA|NOPTR, $4
DATA iq4c30<>+0(SB)/4, $0x30
GLOBL iq4c30<>(SB), RODATA|NOPTR, $4
DATA iq4c32<>+0(SB)/4, $32
GLOBL iq4c32<>(SB), RODATA|NOPTR, $4

// IQSC(ib): sub-block ib's scale from the low nibble ib of scales_l (Y1)
// and bits 2ib, 2ib+1 of scales_h (Y0's high words), less 32, into scr as
// a dword and as a pair (Y4: 0x0f, Y5: 0x30, Y6: 32).
#define IQSC(ib) \
	VPSRLD   $(4*(ib)), Y1, Y2 \
	VPAND    Y4, Y2, Y2 \
	VPSRLD   $(12+2*(ib)), Y0, Y3 \
	VPAND    Y5, Y3, Y3 \
	VPOR     Y3, Y2, Y2 \
	VPSUBD   Y6, Y2, Y2 \
	VMOVDQU  Y2, (32*(ib))(R9) \
	VPSLLD   $16, Y2, Y3 \
	VPBLENDW $0x55, Y2, Y3, Y3 \
	VMOVDQU  Y3, (256+32*(ib))(R9)

// IQSCALES decodes the eight rows' scales and d of the super-block at DI
// into scr (R9). Y0-Y6 clobbered.
#define IQSCALES \
	VMOVDQU      (DI), Y0 \
	VMOVDQU      32(DI), Y1 \
	VPBROADCASTD iq4c0f<>(SB), Y4 \
	VPBROADCASTD iq4c30<>(SB), Y5 \
	VPBROADCASTD iq4c32<>(SB), Y6 \
	IQSC(0) \
	IQSC(1) \
	IQSC(2) \
	IQSC(3) \
	IQSC(4) \
	IQSC(5) \
	IQSC(6) \
	IQSC(7) \
	VPSHUFB      iq4d<>(SB), Y0, Y0 \
	VPERMQ       $0x08, Y0, Y0 \
	VCVTPH2PS    X0, Y1 \
	VMOVUPS      Y1, 512(R9)

// IQLO(off) and IQHI(off): the packed dword vector at off(DI), its low or
// high nibbles' grid entries plus 128, into Y8 (Y15: 0x0f, Y13: iq4u).
#define IQLO(off) \
	VPAND   (off)(DI), Y15, Y8 \
	VPSHUFB Y8, Y13, Y8

#define IQHI(off) \
	VMOVDQU (off)(DI), Y8 \
	VPSRLW  $4, Y8, Y8 \
	VPAND   Y15, Y8, Y8 \
	VPSHUFB Y8, Y13, Y8

// IQ4T(a): Y8 by four tokens' activations at a (R4BC), added to Y0-Y3.
#define IQ4T(a) \
	R4BC(a) \
	VPDPBUSDY(0, 8, 9) \
	VPDPBUSDY(1, 8, 10) \
	VPDPBUSDY(2, 8, 11) \
	VPDPBUSDY(3, 8, 12)

// IQ4V(ib, v): packed dword v of sub-block ib (values 4v.. and 16+4v..)
// for four tokens.
#define IQ4V(ib, v) \
	IQLO(64+32*(4*(ib)+(v))) \
	IQ4T(32*(ib)+4*(v)) \
	IQHI(64+32*(4*(ib)+(v))) \
	IQ4T(32*(ib)+16+4*(v))

// IQ4SUB(ib): sub-block ib for four tokens, its sums in Y0-Y3.
#define IQ4SUB(ib) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	IQ4V(ib, 0) \
	IQ4V(ib, 1) \
	IQ4V(ib, 2) \
	IQ4V(ib, 3)

// IQ4SCF(ib) and IQ4SC(ib): the sums times sub-block ib's scales into
// (or added to) S in Y4-Y7.
#define IQ4SCF(ib) \
	VPMULLD (32*(ib))(R9), Y0, Y4 \
	VPMULLD (32*(ib))(R9), Y1, Y5 \
	VPMULLD (32*(ib))(R9), Y2, Y6 \
	VPMULLD (32*(ib))(R9), Y3, Y7

#define IQ4SC(ib) \
	VPMULLD (32*(ib))(R9), Y0, Y0 \
	VPMULLD (32*(ib))(R9), Y1, Y1 \
	VPMULLD (32*(ib))(R9), Y2, Y2 \
	VPMULLD (32*(ib))(R9), Y3, Y3 \
	VPADDD  Y0, Y4, Y4 \
	VPADDD  Y1, Y5, Y5 \
	VPADDD  Y2, Y6, Y6 \
	VPADDD  Y3, Y7, Y7

// IQ1V(ib, v) and IQ1SUB(ib): the same for one token (BX), in two chains
// (Y0 low nibbles, Y1 high), then added in Y0.
#define IQ1V(ib, v) \
	IQLO(64+32*(4*(ib)+(v))) \
	VPBROADCASTD (32*(ib)+4*(v))(BX), Y9 \
	VPDPBUSDY(0, 8, 9) \
	IQHI(64+32*(4*(ib)+(v))) \
	VPBROADCASTD (32*(ib)+16+4*(v))(BX), Y9 \
	VPDPBUSDY(1, 8, 9)

#define IQ1SUB(ib) \
	VPXOR  Y0, Y0, Y0 \
	VPXOR  Y1, Y1, Y1 \
	IQ1V(ib, 0) \
	IQ1V(ib, 1) \
	IQ1V(ib, 2) \
	IQ1V(ib, 3) \
	VPADDD Y1, Y0, Y0

// IQEND(S, acc): a token's super-block, the 128s off (OFFEND).
#define IQEND(S, acc) OFFEND(256, 7, 512, S, acc)

// func iq4xsRows8AVXVNNI(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
TEXT ·iq4xsRows8AVXVNNI(SB), NOSPLIT, $0-80
	R8ARGS(zero, 576)
	VMOVDQU ·r8nib(SB), Y15
	VMOVDQU iq4u<>(SB), Y13

block:
	R8PF
	IQSCALES
	R8TOKS(576)
	CMPQ R10, $4
	JLT  one

four:
	LEAQ (BX)(R8*2), R11
	IQ4SUB(0)
	IQ4SCF(0)
	IQ4SUB(1)
	IQ4SC(1)
	IQ4SUB(2)
	IQ4SC(2)
	IQ4SUB(3)
	IQ4SC(3)
	IQ4SUB(4)
	IQ4SC(4)
	IQ4SUB(5)
	IQ4SC(5)
	IQ4SUB(6)
	IQ4SC(6)
	IQ4SUB(7)
	IQ4SC(7)
	R8LOOP4(IQEND)
	R8ONE
	IQ1SUB(0)
	VMOVDQA Y0, Y4
	VPMULLD (R9), Y4, Y4
	IQ1SUB(1)
	VPMULLD 32(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(2)
	VPMULLD 64(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(3)
	VPMULLD 96(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(4)
	VPMULLD 128(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(5)
	VPMULLD 160(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(6)
	VPMULLD 192(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	IQ1SUB(7)
	VPMULLD 224(R9), Y0, Y0
	VPADDD  Y0, Y4, Y4
	R8DONE1(IQEND)
	JNZ onetok

next:
	R8NEXT(1088, block)
	ROWS8OUT(write, 576)
