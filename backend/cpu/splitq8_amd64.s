//go:build amd64 && !purego

#include "textflag.h"

// The split form of q8 activations that iq4xsRows8AVX2 takes on plain
// AVX2: VPMADDUBSW of unsigned weights (values plus 128, up to 255) by
// activations up to 127 would saturate a word, so each value is split as
// q = 16h + l with h and l in [-8, 8] and each half multiplied apart.

DATA q8eight<>+0(SB)/8, $0x0008000800080008
DATA q8eight<>+8(SB)/8, $0x0008000800080008
DATA q8eight<>+16(SB)/8, $0x0008000800080008
DATA q8eight<>+24(SB)/8, $0x0008000800080008
GLOBL q8eight<>(SB), RODATA|NOPTR, $32

// func splitQ8AVX2(qs, out *int8, n int)
//
// q8 values (n, a multiple of 32) into the split form: per
// sixteen, h = (q+8)>>4 and l = q-16h as words, packed (VPACKSSWB) to
// the h of values 0-7, their l, the h of 8-15, their l.
TEXT ·splitQ8AVX2(SB), NOSPLIT, $0-24
	MOVQ qs+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   splitdone
	VMOVDQU q8eight<>(SB), Y3

split:
	VPMOVSXBW (SI), Y0
	VPADDW    Y3, Y0, Y1
	VPSRAW    $4, Y1, Y1
	VPSLLW    $4, Y1, Y2
	VPSUBW    Y2, Y0, Y2
	VPACKSSWB Y2, Y1, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       split

splitdone:
	VZEROUPPER
	RET
