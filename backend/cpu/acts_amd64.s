//go:build !purego

#include "textflag.h"

// Work on activations: quantizing them for the int8 kernels, and GELU.

DATA q8absmask<>+0(SB)/4, $0x7fffffff
GLOBL q8absmask<>(SB), RODATA|NOPTR, $4
DATA q8f127<>+0(SB)/4, $127.0
GLOBL q8f127<>(SB), RODATA|NOPTR, $4
DATA q8lowbyte<>+0(SB)/4, $0x000000ff
GLOBL q8lowbyte<>(SB), RODATA|NOPTR, $4
DATA q8ones8<>+0(SB)/4, $0x01010101
GLOBL q8ones8<>(SB), RODATA|NOPTR, $4
DATA q8ones16<>+0(SB)/4, $0x00010001
GLOBL q8ones16<>(SB), RODATA|NOPTR, $4
// VPERMD's order after the two packs: dword i of each source row back in place.
DATA q8order<>+0(SB)/4, $0
DATA q8order<>+4(SB)/4, $4
DATA q8order<>+8(SB)/4, $1
DATA q8order<>+12(SB)/4, $5
DATA q8order<>+16(SB)/4, $2
DATA q8order<>+20(SB)/4, $6
DATA q8order<>+24(SB)/4, $3
DATA q8order<>+28(SB)/4, $7
GLOBL q8order<>(SB), RODATA|NOPTR, $32

// Q8SETUP loads both quantizers' constants: Y15 the sign mask's complement,
// Y13 a dword's low byte, Y12 and Y11 ones (bytes, words), Y10 q8order.
#define Q8SETUP \
	VBROADCASTSS q8absmask<>(SB), Y15 \
	VPBROADCASTD q8lowbyte<>(SB), Y13 \
	VPBROADCASTD q8ones8<>(SB), Y12 \
	VPBROADCASTD q8ones16<>(SB), Y11 \
	VMOVDQU      q8order<>(SB), Y10

// Q8BYTES rounds the 32 floats in Y0-Y3 to int32 (nearest even), stores
// each one's low byte in order at DI (Go's int8() of an int32), and leaves
// the sums of each four in Y1 (values 0-15 in its low lane): ones
// (unsigned) by values (signed) give pair sums, ones by those fours.
#define Q8BYTES \
	VCVTPS2DQ  Y0, Y0 \
	VCVTPS2DQ  Y1, Y1 \
	VCVTPS2DQ  Y2, Y2 \
	VCVTPS2DQ  Y3, Y3 \
	VPAND      Y13, Y0, Y0 \
	VPAND      Y13, Y1, Y1 \
	VPAND      Y13, Y2, Y2 \
	VPAND      Y13, Y3, Y3 \
	VPACKUSDW  Y1, Y0, Y0 \
	VPACKUSDW  Y3, Y2, Y2 \
	VPACKUSWB  Y2, Y0, Y0 \
	VPERMD     Y0, Y10, Y0 \
	VMOVDQU    Y0, (DI) \
	VPMADDUBSW Y0, Y12, Y1 \
	VPMADDWD   Y11, Y1, Y1

// func quantizeQ80AVX2(x *float32, nb int, qs *int8, d *float32, sums, nsum *int32)
// quantizeQ80Go on nb blocks of 32: the same float operations in the same
// order (amax by its bits, amax/127 through fp16, x*(127/amax) rounded to
// nearest even), and each value's int32 truncated to a byte as Go's int8()
// does (only a NaN's differs from saturating).
TEXT ·quantizeQ80AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), R8
	MOVQ sums+32(FP), R9
	MOVQ nsum+40(FP), R10
	Q8SETUP
	VMOVSS       q8f127<>(SB), X14
	TESTQ CX, CX
	JZ    q8a_done

q8a_block:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS  Y15, Y0, Y4
	VANDPS  Y15, Y1, Y5
	VANDPS  Y15, Y2, Y6
	VANDPS  Y15, Y3, Y7
	VPMAXUD Y5, Y4, Y4
	VPMAXUD Y7, Y6, Y6
	VPMAXUD Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPMAXUD X5, X4, X4 // every lane: amax
	VMOVD   X4, AX
	TESTL   AX, AX
	JZ      q8a_zero
	VDIVSS     X14, X4, X5 // amax/127
	VCVTPS2PH  $0, X5, X5
	VCVTPH2PS  X5, X5
	VMOVSS     X5, (R8)
	VDIVSS     X4, X14, X6 // id = 127/amax
	VBROADCASTSS X6, Y6
	VMULPS     Y6, Y0, Y0
	VMULPS     Y6, Y1, Y1
	VMULPS     Y6, Y2, Y2
	VMULPS     Y6, Y3, Y3
	Q8BYTES
	VMOVDQU    Y1, (R9)
	VEXTRACTI128 $1, Y1, X2
	VPADDD     X2, X1, X1
	VPSHUFD    $0x4e, X1, X2
	VPADDD     X2, X1, X1
	VPSHUFD    $0xb1, X1, X2
	VPADDD     X2, X1, X1
	VMOVD      X1, AX
	NEGL       AX
	MOVL       AX, (R10)
	JMP        q8a_next

q8a_zero:
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, (R9)
	MOVL    $0, (R8)
	MOVL    $0, (R10)

q8a_next:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R8
	ADDQ $32, R9
	ADDQ $4, R10
	DECQ CX
	JNZ  q8a_block

q8a_done:
	VZEROUPPER
	RET

DATA q8kclamp<>+0(SB)/4, $127.0
GLOBL q8kclamp<>(SB), RODATA|NOPTR, $4
DATA q8kneg127<>+0(SB)/4, $-127.0
GLOBL q8kneg127<>(SB), RODATA|NOPTR, $4
DATA q8kone<>+0(SB)/4, $1.0
GLOBL q8kone<>(SB), RODATA|NOPTR, $4

// func quantizeQ8KAVX2(x *float32, nb int, qs *int8, d *float32, bs *int16, nsum *int32)
// quantizeQ8KGo on nb blocks of 256: the first value of the largest
// magnitude (NaNs skipped, as Go's > skips them) sets iscale = -127/max,
// each value is iscale*x, at most 127, rounded to nearest even and
// truncated to a byte; bs holds the sums of 16, nsum the negated sums of 32.
TEXT ·quantizeQ8KAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), R8
	MOVQ bs+32(FP), R9
	MOVQ nsum+40(FP), R10
	Q8SETUP
	VBROADCASTSS q8kclamp<>(SB), Y14
	TESTQ CX, CX
	JZ    q8k_done

q8k_block:
	// The largest magnitude: max(|x|, m) keeps m when |x| is a NaN.
	VXORPS Y8, Y8, Y8
	XORQ   AX, AX

q8k_max:
	VANDPS (SI)(AX*1), Y15, Y0
	VANDPS 32(SI)(AX*1), Y15, Y1
	VANDPS 64(SI)(AX*1), Y15, Y2
	VANDPS 96(SI)(AX*1), Y15, Y3
	VMAXPS Y8, Y0, Y8
	VMAXPS Y8, Y1, Y8
	VMAXPS Y8, Y2, Y8
	VMAXPS Y8, Y3, Y8
	ADDQ   $128, AX
	CMPQ   AX, $1024
	JLT    q8k_max
	VPERM2F128 $0x01, Y8, Y8, Y0
	VMAXPS  Y0, Y8, Y8
	VPERMILPS $0x4e, Y8, Y0
	VMAXPS  Y0, Y8, Y8
	VPERMILPS $0xb1, Y8, Y0
	VMAXPS  Y0, Y8, Y8 // every lane: the largest magnitude
	VMOVD   X8, AX
	TESTL   AX, AX
	JZ      q8k_zero

	// Its first place.
	XORQ AX, AX

q8k_find:
	VANDPS    (SI)(AX*4), Y15, Y0
	VCMPPS    $0, Y8, Y0, Y0
	VMOVMSKPS Y0, DX
	TESTL     DX, DX
	JNZ       q8k_found
	ADDQ      $8, AX
	JMP       q8k_find

q8k_found:
	BSFL   DX, DX
	ADDQ   DX, AX
	VMOVSS (SI)(AX*4), X0
	VMOVSS q8kneg127<>(SB), X1
	VDIVSS X0, X1, X1 // iscale = -127/max
	VMOVSS q8kone<>(SB), X2
	VDIVSS X1, X2, X2
	VMOVSS X2, (R8)   // d = 1/iscale
	VBROADCASTSS X1, Y9
	MOVQ   $8, DX

q8k_sub:
	VMULPS     (SI), Y9, Y0
	VMULPS     32(SI), Y9, Y1
	VMULPS     64(SI), Y9, Y2
	VMULPS     96(SI), Y9, Y3
	// min(127, v) as Go's min: a NaN stays (and becomes byte 0), and an
	// overflow (a subnormal max makes iscale infinite) is held at 127.
	VMINPS     Y0, Y14, Y0
	VMINPS     Y1, Y14, Y1
	VMINPS     Y2, Y14, Y2
	VMINPS     Y3, Y14, Y3
	Q8BYTES
	VPHADDD    Y1, Y1, Y1
	VPHADDD    Y1, Y1, Y1  // each lane: its sixteen's sum
	VMOVD      X1, AX
	VEXTRACTI128 $1, Y1, X1
	VMOVD      X1, BX
	MOVW       AX, (R9)
	MOVW       BX, 2(R9)
	ADDL       BX, AX
	NEGL       AX
	MOVL       AX, (R10)
	ADDQ       $128, SI
	ADDQ       $32, DI
	ADDQ       $4, R9
	ADDQ       $4, R10
	DECQ       DX
	JNZ        q8k_sub
	JMP        q8k_next

q8k_zero:
	VPXOR   Y0, Y0, Y0
	MOVQ    $8, DX

q8k_zsub:
	VMOVDQU Y0, (DI)
	MOVL    $0, (R9)
	MOVL    $0, (R10)
	ADDQ    $128, SI
	ADDQ    $32, DI
	ADDQ    $4, R9
	ADDQ    $4, R10
	DECQ    DX
	JNZ     q8k_zsub
	MOVL    $0, (R8)

q8k_next:
	ADDQ $4, R8
	DECQ CX
	JNZ  q8k_block

q8k_done:
	VZEROUPPER
	RET

DATA geluLo<>+0(SB)/4, $-10.0
GLOBL geluLo<>(SB), RODATA|NOPTR, $4
DATA geluHi<>+0(SB)/4, $10.0
GLOBL geluHi<>(SB), RODATA|NOPTR, $4

// func geluAVX2(x, y *float32, n int, table *float32)
// x[i] = gelu(x[i]), times y[i] unless y is nil, for i < n (a multiple of
// 8), as gelu does: 0 at or below -10, x at or above 10, else the table's
// entry at x rounded to a half float (nearest even).
TEXT ·geluAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ table+24(FP), R8
	VBROADCASTSS geluLo<>(SB), Y15
	VBROADCASTSS geluHi<>(SB), Y14
	VPCMPEQD     Y13, Y13, Y13
	SHRQ $3, CX
	JZ   gelu_done

gelu_loop:
	VMOVUPS    (DI), Y0
	VCVTPS2PH  $0, Y0, X1
	VPMOVZXWD  X1, Y1
	VMOVDQA    Y13, Y3 // the gather clears its mask
	VPXOR      Y2, Y2, Y2
	VGATHERDPS Y3, (R8)(Y1*4), Y2
	VCMPPS     $2, Y15, Y0, Y4  // x <= -10
	VANDNPS    Y2, Y4, Y2
	VCMPPS     $13, Y14, Y0, Y5 // x >= 10
	VBLENDVPS  Y5, Y0, Y2, Y2
	TESTQ      SI, SI
	JZ         gelu_store
	VMULPS     (SI), Y2, Y2
	ADDQ       $32, SI

gelu_store:
	VMOVUPS Y2, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     gelu_loop

gelu_done:
	VZEROUPPER
	RET
