//go:build amd64 && !purego

#include "textflag.h"
#include "reduce_amd64.h"

// The int8 path's kernels for the other 32-value formats (int8b.go): Q4_1,
// Q5_0, Q5_1 and IQ4_NL against q8_0 activations, on AVX2. Lane l
// of a block sums elements 4l..4l+3 exactly (VPMADDUBSW then VPMADDWD by
// ones: the lanes VPDPBUSD would give), then is scaled and added into its
// float lane, as lanes32Go does; the lanes fold as hsum8.

// q5spread: VPSHUFB mask putting qh byte j/8 in byte j (both lanes see the
// dword; the high lane takes bytes 2 and 3).
DATA q5spread<>+0(SB)/8, $0x0000000000000000
DATA q5spread<>+8(SB)/8, $0x0101010101010101
DATA q5spread<>+16(SB)/8, $0x0202020202020202
DATA q5spread<>+24(SB)/8, $0x0303030303030303
GLOBL q5spread<>(SB), RODATA|NOPTR, $32

DATA q5bits<>+0(SB)/8, $0x8040201008040201
DATA q5bits<>+8(SB)/8, $0x8040201008040201
DATA q5bits<>+16(SB)/8, $0x8040201008040201
DATA q5bits<>+24(SB)/8, $0x8040201008040201
GLOBL q5bits<>(SB), RODATA|NOPTR, $32

// SCALEADD adds the lane sums in Y4 (int32), times s * the token's scale
// at dp, into acc; t (x its low half) is scratch. s is an X register.
#define SCALEADD(dp, s, x, t, acc) \
	VPMADDWD     Y14, Y4, Y4 \
	VCVTDQ2PS    Y4, Y4      \
	VBROADCASTSS dp, x       \
	VMULSS       s, x, x     \
	VBROADCASTSS x, t        \
	VMULPS       t, Y4, Y4   \
	VADDPS       Y4, acc, acc

// TOKU: unsigned values (Y1) against the token's activations at xa.
#define TOKU(xa, dp, acc) \
	VMOVDQU    xa, Y3        \
	VPMADDUBSW Y3, Y1, Y4    \
	SCALEADD(dp, X5, X2, Y2, acc)

// TOKC: TOKU less 16 times the activations (Q5_0's centred values).
#define TOKC(xa, dp, acc) \
	VMOVDQU    xa, Y3        \
	VPMADDUBSW Y3, Y1, Y4    \
	VPMADDUBSW Y3, Y13, Y2   \
	VPSUBW     Y2, Y4, Y4    \
	SCALEADD(dp, X5, X2, Y2, acc)

// TOKM: TOKU, then the min (X6) times the activations' lane sums.
#define TOKM(xa, dp, acc) \
	TOKU(xa, dp, acc)        \
	VPMADDUBSW Y3, Y13, Y4   \
	SCALEADD(dp, X6, X2, Y2, acc)

// TOKS: signed values (Y1, magnitudes in Y2) through the sign trick.
#define TOKS(xa, dp, acc) \
	VMOVDQU    xa, Y3        \
	VPSIGNB    Y1, Y3, Y4    \
	VPMADDUBSW Y4, Y2, Y4    \
	SCALEADD(dp, X5, X6, Y6, acc)

// BCAST32 sets y's dwords (x its low half) to the constant c; AX clobbered.
#define BCAST32(c, x, y) \
	MOVL $(c), AX; \
	VMOVD AX, x; \
	VPBROADCASTD x, y

// NIBS sets Y1 to a block's 32 nibbles (16 bytes at q) in element order.
#define NIBS(q) \
	VMOVDQU     q, X1          \
	VPSRLW      $4, X1, X2     \
	VINSERTI128 $1, X2, Y1, Y1 \
	VPAND       Y15, Y1, Y1

// HIGH5 ORs the fifth bits (qh dword at h) into the nibbles in Y1.
#define HIGH5(h) \
	VPBROADCASTD h, Y2   \
	VPSHUFB  Y11, Y2, Y2 \
	VPAND    Y12, Y2, Y2 \
	VPCMPEQB Y12, Y2, Y2 \
	VPAND    Y10, Y2, Y2 \
	VPOR     Y2, Y1, Y1

// X4ARGS loads a four-token kernel's arguments (SI w, DI qs, DX d, R11
// qstride, R12 3 qstride, R13 and R14 dstride and 3 dstride in bytes, CX
// nb) and zeroes its accumulators Y0, Y7, Y8 and Y9.
#define X4ARGS \
	MOVQ w+0(FP), SI \
	MOVQ qs+8(FP), DI \
	MOVQ d+16(FP), DX \
	MOVQ qstride+24(FP), R11 \
	MOVQ dstride+32(FP), R13 \
	MOVQ nb+40(FP), CX \
	LEAQ (R11)(R11*2), R12 \
	SHLQ $2, R13 \
	LEAQ (R13)(R13*2), R14 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9

// X4OUT sums each accumulator's lanes into out[0..3] and returns.
#define X4OUT \
	MOVQ out+48(FP), DX \
	HSUM8(Y0, X0, X1) \
	VMOVSS X0, 0(DX) \
	HSUM8(Y7, X7, X1) \
	VMOVSS X7, 4(DX) \
	HSUM8(Y8, X8, X1) \
	VMOVSS X8, 8(DX) \
	HSUM8(Y9, X9, X1) \
	VMOVSS X9, 12(DX) \
	VZEROUPPER \
	RET

// func dotQ41AVX2(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ41AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	BCAST32(0x01010101, X13, Y13)
	TESTQ CX, CX
	JZ    dotQ41AVX2_done

dotQ41AVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(4(SI))
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	MOVWLZX 2(SI), AX
	VMOVD   AX, X6
	VCVTPH2PS X6, X6
	TOKM((DI), (DX), Y0)
	ADDQ $20, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ41AVX2_loop

dotQ41AVX2_done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotQ41x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)
TEXT ·dotQ41x4AVX2(SB), NOSPLIT, $0-56
	X4ARGS
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	BCAST32(0x01010101, X13, Y13)
	TESTQ CX, CX
	JZ    dotQ41x4AVX2_done

dotQ41x4AVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(4(SI))
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	MOVWLZX 2(SI), AX
	VMOVD   AX, X6
	VCVTPH2PS X6, X6
	TOKM(0(DI), (DX), Y0)
	TOKM(0(DI)(R11*1), (DX)(R13*1), Y7)
	TOKM(0(DI)(R11*2), (DX)(R13*2), Y8)
	TOKM(0(DI)(R12*1), (DX)(R14*1), Y9)
	ADDQ $20, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ41x4AVX2_loop

dotQ41x4AVX2_done:
	X4OUT

// func dotQ50AVX2(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ50AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	BCAST32(0x10101010, X13, Y13)
	VMOVDQU q5spread<>(SB), Y11
	VMOVDQU q5bits<>(SB), Y12
	BCAST32(0x10101010, X10, Y10)
	TESTQ CX, CX
	JZ    dotQ50AVX2_done

dotQ50AVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(6(SI))
	HIGH5(2(SI))
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	TOKC((DI), (DX), Y0)
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ50AVX2_loop

dotQ50AVX2_done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotQ50x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)
TEXT ·dotQ50x4AVX2(SB), NOSPLIT, $0-56
	X4ARGS
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	BCAST32(0x10101010, X13, Y13)
	VMOVDQU q5spread<>(SB), Y11
	VMOVDQU q5bits<>(SB), Y12
	BCAST32(0x10101010, X10, Y10)
	TESTQ CX, CX
	JZ    dotQ50x4AVX2_done

dotQ50x4AVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(6(SI))
	HIGH5(2(SI))
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	TOKC(0(DI), (DX), Y0)
	TOKC(0(DI)(R11*1), (DX)(R13*1), Y7)
	TOKC(0(DI)(R11*2), (DX)(R13*2), Y8)
	TOKC(0(DI)(R12*1), (DX)(R14*1), Y9)
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ50x4AVX2_loop

dotQ50x4AVX2_done:
	X4OUT

// func dotQ51AVX2(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ51AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	BCAST32(0x01010101, X13, Y13)
	VMOVDQU q5spread<>(SB), Y11
	VMOVDQU q5bits<>(SB), Y12
	BCAST32(0x10101010, X10, Y10)
	TESTQ CX, CX
	JZ    dotQ51AVX2_done

dotQ51AVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(8(SI))
	HIGH5(4(SI))
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	MOVWLZX 2(SI), AX
	VMOVD   AX, X6
	VCVTPH2PS X6, X6
	TOKM((DI), (DX), Y0)
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ51AVX2_loop

dotQ51AVX2_done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotQ51x4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)
TEXT ·dotQ51x4AVX2(SB), NOSPLIT, $0-56
	X4ARGS
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	BCAST32(0x01010101, X13, Y13)
	VMOVDQU q5spread<>(SB), Y11
	VMOVDQU q5bits<>(SB), Y12
	BCAST32(0x10101010, X10, Y10)
	TESTQ CX, CX
	JZ    dotQ51x4AVX2_done

dotQ51x4AVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(8(SI))
	HIGH5(4(SI))
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	MOVWLZX 2(SI), AX
	VMOVD   AX, X6
	VCVTPH2PS X6, X6
	TOKM(0(DI), (DX), Y0)
	TOKM(0(DI)(R11*1), (DX)(R13*1), Y7)
	TOKM(0(DI)(R11*2), (DX)(R13*2), Y8)
	TOKM(0(DI)(R12*1), (DX)(R14*1), Y9)
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ51x4AVX2_loop

dotQ51x4AVX2_done:
	X4OUT

// func dotIQ4NLAVX2(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotIQ4NLAVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	VBROADCASTI128 ·iq4grid(SB), Y11
	TESTQ CX, CX
	JZ    dotIQ4NLAVX2_done

dotIQ4NLAVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(2(SI))
	VPSHUFB Y1, Y11, Y1
	VPABSB  Y1, Y2
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	TOKS((DI), (DX), Y0)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotIQ4NLAVX2_loop

dotIQ4NLAVX2_done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotIQ4NLx4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)
TEXT ·dotIQ4NLx4AVX2(SB), NOSPLIT, $0-56
	X4ARGS
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	VBROADCASTI128 ·iq4grid(SB), Y11
	TESTQ CX, CX
	JZ    dotIQ4NLx4AVX2_done

dotIQ4NLx4AVX2_loop:
	PREFETCHT0 512(SI)
	NIBS(2(SI))
	VPSHUFB Y1, Y11, Y1
	VPABSB  Y1, Y2
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	TOKS(0(DI), (DX), Y0)
	TOKS(0(DI)(R11*1), (DX)(R13*1), Y7)
	TOKS(0(DI)(R11*2), (DX)(R13*2), Y8)
	TOKS(0(DI)(R12*1), (DX)(R14*1), Y9)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotIQ4NLx4AVX2_loop

dotIQ4NLx4AVX2_done:
	X4OUT


// Q4_0 on AVX2 in its sixteen-lane form (dotQ40Go): even blocks into Y0,
// odd blocks into Y7, the -8 offset through the activations' lane sums;
// the two fold as fold16. VPMADDUBSW then VPMADDWD by ones gives the lanes
// VPDPBUSD gives (nibbles times int8 activations cannot saturate).
#define Q40AVX2BLOCK(acc) \
	NIBS(2(SI))                  \
	MOVWLZX (SI), AX             \
	VMOVD   AX, X5               \
	VCVTPH2PS X5, X5             \
	VMOVDQU (DI), Y3             \
	VPMADDUBSW Y3, Y1, Y4        \
	VPMADDWD   Y14, Y4, Y4       \
	VMOVDQU    (R8), Y2          \
	VPSLLD     $3, Y2, Y2        \
	VPSUBD     Y2, Y4, Y4        \
	VCVTDQ2PS  Y4, Y4            \
	VBROADCASTSS (DX), X2        \
	VMULSS     X5, X2, X2        \
	VBROADCASTSS X2, Y2          \
	VMULPS     Y2, Y4, Y4        \
	VADDPS     Y4, acc, acc      \
	ADDQ $18, SI                 \
	ADDQ $32, DI                 \
	ADDQ $4, DX                  \
	ADDQ $32, R8

// func dotQ40AVX2(w *byte, qs *int8, d *float32, sums *int32, nb int) float32
TEXT ·dotQ40AVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ sums+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	BCAST32(0x0F0F0F0F, X15, Y15)
	BCAST32(0x00010001, X14, Y14)
	MOVQ CX, R9
	SHRQ $1, R9
	JZ   q40a_tail

q40a_loop:
	PREFETCHT0 512(SI)
	Q40AVX2BLOCK(Y0)
	Q40AVX2BLOCK(Y7)
	DECQ R9
	JNZ  q40a_loop

q40a_tail:
	TESTQ $1, CX
	JZ    q40a_fold
	Q40AVX2BLOCK(Y0)

q40a_fold:
	VADDPS Y7, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func dotQ80LanesAVX2(w *byte, qs *int8, d *float32, nb int) float32
// Q8_0 weights (signed bytes: TOKS, magnitudes by VPABSB) in lanes32Go's
// lanes: the int8 matmul's kernel on AVX2 without VNNI.
TEXT ·dotQ80LanesAVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	BCAST32(0x00010001, X14, Y14)
	TESTQ CX, CX
	JZ    dotQ80LanesAVX2_done

dotQ80LanesAVX2_loop:
	PREFETCHT0 512(SI)
	VMOVDQU 2(SI), Y1
	VPABSB  Y1, Y2
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	TOKS((DI), (DX), Y0)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ80LanesAVX2_loop

dotQ80LanesAVX2_done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotQ80Lanesx4AVX2(w *byte, qs *int8, d *float32, qstride, dstride, nb int, out *float32)
TEXT ·dotQ80Lanesx4AVX2(SB), NOSPLIT, $0-56
	X4ARGS
	BCAST32(0x00010001, X14, Y14)
	TESTQ CX, CX
	JZ    dotQ80Lanesx4AVX2_done

dotQ80Lanesx4AVX2_loop:
	PREFETCHT0 512(SI)
	VMOVDQU 2(SI), Y1
	VPABSB  Y1, Y2
	MOVWLZX (SI), AX
	VMOVD   AX, X5
	VCVTPH2PS X5, X5
	TOKS(0(DI), (DX), Y0)
	TOKS(0(DI)(R11*1), (DX)(R13*1), Y7)
	TOKS(0(DI)(R11*2), (DX)(R13*2), Y8)
	TOKS(0(DI)(R12*1), (DX)(R14*1), Y9)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  dotQ80Lanesx4AVX2_loop

dotQ80Lanesx4AVX2_done:
	X4OUT
