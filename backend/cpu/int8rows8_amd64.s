//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows8_amd64.h"

// q4kRows8AVX2: Q4_K rows packed eight to a group (packQ4K8) against q8_K
// activations on AVX2, each row in a dword lane: dotQ4KRowGo's integers
// and float steps, so its bits. Per super-block the rows' scales and mins
// are decoded once into scr as 16-bit pairs; then per token each sub-block
// is eight VPMADDUBSW of a packed dword vector (four nibbles of each row)
// by the token's four activations broadcast, summed in 16 bits (at most
// 16 products of 15 by 127 a word: no overflow), then VPMADDWD by the
// scale pair: S exact. The min part takes the activations' 16-sums
// (bs) by the min pairs: minus dotQ4KRowGo's M, so it is subtracted.
//
// scr (bytes): 0 the scale pairs of sub-blocks 0-7, 256 the min pairs,
// 512 d and 544 dmin as floats, 576 each token's eight float sums.

DATA ·r8nib+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·r8nib+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·r8nib+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·r8nib+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ·r8nib(SB), RODATA|NOPTR, $32

DATA ·r8c3f+0(SB)/4, $0x3f3f3f3f
GLOBL ·r8c3f(SB), RODATA|NOPTR, $4
DATA ·r8c0f+0(SB)/4, $0x0f0f0f0f
GLOBL ·r8c0f(SB), RODATA|NOPTR, $4
DATA ·r8c30+0(SB)/4, $0x30303030
GLOBL ·r8c30(SB), RODATA|NOPTR, $4
DATA ·r8c10+0(SB)/4, $0x10101010
GLOBL ·r8c10(SB), RODATA|NOPTR, $4

// ·r8pair+32k: VPSHUFB masks taking byte k of every dword to both its
// words.
DATA ·r8pair+0(SB)/8, $0x8004800480008000
DATA ·r8pair+8(SB)/8, $0x800c800c80088008
DATA ·r8pair+16(SB)/8, $0x8004800480008000
DATA ·r8pair+24(SB)/8, $0x800c800c80088008
DATA ·r8pair+32(SB)/8, $0x8005800580018001
DATA ·r8pair+40(SB)/8, $0x800d800d80098009
DATA ·r8pair+48(SB)/8, $0x8005800580018001
DATA ·r8pair+56(SB)/8, $0x800d800d80098009
DATA ·r8pair+64(SB)/8, $0x8006800680028002
DATA ·r8pair+72(SB)/8, $0x800e800e800a800a
DATA ·r8pair+80(SB)/8, $0x8006800680028002
DATA ·r8pair+88(SB)/8, $0x800e800e800a800a
DATA ·r8pair+96(SB)/8, $0x8007800780038003
DATA ·r8pair+104(SB)/8, $0x800f800f800b800b
DATA ·r8pair+112(SB)/8, $0x8007800780038003
DATA ·r8pair+120(SB)/8, $0x800f800f800b800b
GLOBL ·r8pair(SB), RODATA|NOPTR, $128

// ·r8dh: a lane's four d halves, then its four dmin halves.
DATA ·r8dh+0(SB)/8, $0x0d0c090805040100
DATA ·r8dh+8(SB)/8, $0x0f0e0b0a07060302
DATA ·r8dh+16(SB)/8, $0x0d0c090805040100
DATA ·r8dh+24(SB)/8, $0x0f0e0b0a07060302
GLOBL ·r8dh(SB), RODATA|NOPTR, $32

// R4SUB(LD, w, a): one sub-block, its packed vectors from w (LD: R8LO or
// R8HI), its activations from a.
#define R4SUB(LD, w, a) \
	LD(w) \
	R4F(a) \
	LD(w+32) \
	R4(a+4) \
	LD(w+64) \
	R4(a+8) \
	LD(w+96) \
	R4(a+12) \
	LD(w+128) \
	R4(a+16) \
	LD(w+160) \
	R4(a+20) \
	LD(w+192) \
	R4(a+24) \
	LD(w+224) \
	R4(a+28)

#define R1SUB(LD, w, a) \
	LD(w) \
	R1F(a, Y0) \
	LD(w+32) \
	R1F(a+4, Y1) \
	LD(w+64) \
	R1(a+8, Y0) \
	LD(w+96) \
	R1(a+12, Y1) \
	LD(w+128) \
	R1(a+16, Y0) \
	LD(w+160) \
	R1(a+20, Y1) \
	LD(w+192) \
	R1(a+24, Y0) \
	LD(w+224) \
	R1(a+28, Y1) \
	VPADDW Y1, Y0, Y0

// func q4kRows8AVX2(w *byte, qs *int8, bs *int16, d *float32, qstride, nsb, ntok int, scr, out *float32, ostride int)
TEXT ·q4kRows8AVX2(SB), NOSPLIT, $0-80
	R8ARGS(zero, 576)
	VMOVDQU ·r8nib(SB), Y15

block:
	R8PF
	R8SCALES
	R8TOKS(576)
	CMPQ R10, $4
	JLT  one

four:
	LEAQ  (BX)(R8*2), R11
	R4SUB(R8LO, 128, 0)
	R4SCF(0)
	R4SUB(R8HI, 128, 32)
	R4SC(1)
	R4SUB(R8LO, 384, 64)
	R4SC(2)
	R4SUB(R8HI, 384, 96)
	R4SC(3)
	R4SUB(R8LO, 640, 128)
	R4SC(4)
	R4SUB(R8HI, 640, 160)
	R4SC(5)
	R4SUB(R8LO, 896, 192)
	R4SC(6)
	R4SUB(R8HI, 896, 224)
	R4SC(7)
	R8LOOP4(R8END)
	R8ONE
	R1SUB(R8LO, 128, 0)
	VPMADDWD (R9), Y0, Y4
	R1SUB(R8HI, 128, 32)
	VPMADDWD 32(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8LO, 384, 64)
	VPMADDWD 64(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8HI, 384, 96)
	VPMADDWD 96(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8LO, 640, 128)
	VPMADDWD 128(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8HI, 640, 160)
	VPMADDWD 160(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8LO, 896, 192)
	VPMADDWD 192(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R1SUB(R8HI, 896, 224)
	VPMADDWD 224(R9), Y0, Y0
	VPADDD   Y0, Y4, Y4
	R8DONE1(R8END)
	JNZ  onetok

next:
	R8NEXT(1152, block)
	ROWS8OUT(write, 576)
