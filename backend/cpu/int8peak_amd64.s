//go:build amd64 && !purego

#include "textflag.h"

// The inner loops of the plain AVX2 int8 kernels alone, on registers and
// a buffer in L1, for MeasureInt8Peak: what a core can do at best per 32
// products in each form, whatever the memory and the float steps around.

// PKS(o, acc): the sign trick (q80Rows8AVX2): a token's broadcast dword
// takes w's signs, VPMADDUBSW by |w|, VPMADDWD by ones, added.
#define PKS(o, acc) \
	VPBROADCASTD o(BX), Y9 \
	VPSIGNB      Y8, Y9, Y9 \
	VPMADDUBSW   Y9, Y14, Y9 \
	VPMADDWD     Y15, Y9, Y9 \
	VPADDD       Y9, acc, acc

#define PKS4(o) \
	VMOVDQU o(DI), Y8 \
	VPABSB  Y8, Y14 \
	PKS(o, Y0) \
	PKS(o+4, Y1) \
	PKS(o+8, Y2) \
	PKS(o+12, Y3)

// PKW(o, lo, hi): words (iq4xsRows8AVX2W): four words broadcast, VPMADDWD
// by two vectors of values, added.
#define PKW(o, lo, hi) \
	VPBROADCASTQ o(BX), Y10 \
	VPMADDWD     Y10, Y8, Y11 \
	VPADDD       Y11, lo, lo \
	VPMADDWD     Y10, Y9, Y10 \
	VPADDD       Y10, hi, hi

#define PKW4(o) \
	VMOVDQU o(DI), Y8 \
	VMOVDQU o+32(DI), Y9 \
	PKW(o, Y0, Y4) \
	PKW(o+8, Y1, Y5) \
	PKW(o+16, Y2, Y6) \
	PKW(o+24, Y3, Y7)

// PKN(o, acc): nibbles (q40Rows8AVX2, the K-quants): VPMADDUBSW of 4-bit
// values by a token's broadcast dword, summed in 16 bits, widened once
// eight vectors (PKNW).
#define PKN(o, acc) \
	VPBROADCASTD o(BX), Y9 \
	VPMADDUBSW   Y9, Y8, Y9 \
	VPADDW       Y9, acc, acc

#define PKN4(o) \
	VPAND (o)(DI), Y15, Y8 \
	PKN(o, Y0) \
	PKN(o+4, Y1) \
	PKN(o+8, Y2) \
	PKN(o+12, Y3)

#define PKNW(acc, sum) \
	VPMADDWD Y12, acc, Y9 \
	VPADDD   Y9, sum, sum

// func int8PeakAVX2(form int, buf *byte, iters int)
//
// form 0: the sign trick, 1: words (256 products an iteration), 2:
// nibbles (1024); buf at least 256 bytes.
TEXT ·int8PeakAVX2(SB), NOSPLIT, $0-24
	MOVQ  form+0(FP), AX
	MOVQ  buf+8(FP), BX
	MOVQ  BX, DI
	MOVQ  iters+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y12, Y12, Y12
	VPXOR Y15, Y15, Y15
	CMPQ  AX, $1
	JEQ   words
	JGT   nibbles

sign:
	PKS4(0)
	PKS4(16)
	DECQ CX
	JNZ  sign
	JMP  done

words:
	PKW4(0)
	PKW4(64)
	DECQ CX
	JNZ  words
	JMP  done

nibbles:
	PKN4(0)
	PKN4(16)
	PKN4(32)
	PKN4(48)
	PKN4(64)
	PKN4(80)
	PKN4(96)
	PKN4(112)
	PKNW(Y0, Y4)
	PKNW(Y1, Y5)
	PKNW(Y2, Y6)
	PKNW(Y3, Y7)
	DECQ CX
	JNZ  nibbles

done:
	VZEROUPPER
	RET
