//go:build amd64 && !purego

#include "textflag.h"

// Q6_K x q8_K for four tokens per pass over a row (AVX512BW + VNNI): each
// super-block is unpacked once into 256 unsigned 6-bit bytes (Z24..Z27, in
// element order) and its scales spread to words (Z20..Z23); per token the
// scaled sub-block dots and the offset correction are the exact integer
// dotQ6KGo sums (in another order: integers), the four tokens' integers
// are folded together, and acc += (dx*d)*S runs on the four at once, lane
// for lane the scalar float work of dotQ6KGo.

// q6k4perm<>: VPERMW indexes; for 64-value chunk k, word i takes scale
// 4k + i/8 (the sub-block of the pair of values VPMADDUBSW summed).
DATA q6k4perm<>+0(SB)/8, $0x0000000000000000
DATA q6k4perm<>+8(SB)/8, $0x0000000000000000
DATA q6k4perm<>+16(SB)/8, $0x0001000100010001
DATA q6k4perm<>+24(SB)/8, $0x0001000100010001
DATA q6k4perm<>+32(SB)/8, $0x0002000200020002
DATA q6k4perm<>+40(SB)/8, $0x0002000200020002
DATA q6k4perm<>+48(SB)/8, $0x0003000300030003
DATA q6k4perm<>+56(SB)/8, $0x0003000300030003
DATA q6k4perm<>+64(SB)/8, $0x0004000400040004
DATA q6k4perm<>+72(SB)/8, $0x0004000400040004
DATA q6k4perm<>+80(SB)/8, $0x0005000500050005
DATA q6k4perm<>+88(SB)/8, $0x0005000500050005
DATA q6k4perm<>+96(SB)/8, $0x0006000600060006
DATA q6k4perm<>+104(SB)/8, $0x0006000600060006
DATA q6k4perm<>+112(SB)/8, $0x0007000700070007
DATA q6k4perm<>+120(SB)/8, $0x0007000700070007
DATA q6k4perm<>+128(SB)/8, $0x0008000800080008
DATA q6k4perm<>+136(SB)/8, $0x0008000800080008
DATA q6k4perm<>+144(SB)/8, $0x0009000900090009
DATA q6k4perm<>+152(SB)/8, $0x0009000900090009
DATA q6k4perm<>+160(SB)/8, $0x000a000a000a000a
DATA q6k4perm<>+168(SB)/8, $0x000a000a000a000a
DATA q6k4perm<>+176(SB)/8, $0x000b000b000b000b
DATA q6k4perm<>+184(SB)/8, $0x000b000b000b000b
DATA q6k4perm<>+192(SB)/8, $0x000c000c000c000c
DATA q6k4perm<>+200(SB)/8, $0x000c000c000c000c
DATA q6k4perm<>+208(SB)/8, $0x000d000d000d000d
DATA q6k4perm<>+216(SB)/8, $0x000d000d000d000d
DATA q6k4perm<>+224(SB)/8, $0x000e000e000e000e
DATA q6k4perm<>+232(SB)/8, $0x000e000e000e000e
DATA q6k4perm<>+240(SB)/8, $0x000f000f000f000f
DATA q6k4perm<>+248(SB)/8, $0x000f000f000f000f
GLOBL q6k4perm<>(SB), RODATA|NOPTR, $256

// q6k4shift<>: VPSRLVW counts taking qh's bit pairs: for values 0..63 of
// a half, pairs 0 (first 32) and 1 (next 32); for values 64..127, 2 and 3.
DATA q6k4shift<>+0(SB)/8, $0x0000000000000000
DATA q6k4shift<>+8(SB)/8, $0x0000000000000000
DATA q6k4shift<>+16(SB)/8, $0x0000000000000000
DATA q6k4shift<>+24(SB)/8, $0x0000000000000000
DATA q6k4shift<>+32(SB)/8, $0x0002000200020002
DATA q6k4shift<>+40(SB)/8, $0x0002000200020002
DATA q6k4shift<>+48(SB)/8, $0x0002000200020002
DATA q6k4shift<>+56(SB)/8, $0x0002000200020002
DATA q6k4shift<>+64(SB)/8, $0x0004000400040004
DATA q6k4shift<>+72(SB)/8, $0x0004000400040004
DATA q6k4shift<>+80(SB)/8, $0x0004000400040004
DATA q6k4shift<>+88(SB)/8, $0x0004000400040004
DATA q6k4shift<>+96(SB)/8, $0x0006000600060006
DATA q6k4shift<>+104(SB)/8, $0x0006000600060006
DATA q6k4shift<>+112(SB)/8, $0x0006000600060006
DATA q6k4shift<>+120(SB)/8, $0x0006000600060006
GLOBL q6k4shift<>(SB), RODATA|NOPTR, $128

// Q6K4HALF unpacks half h of the super-block at SI (ql at qlo, qh at qho)
// into zlo (its values 0..63) and zhi (64..127). Z14: 0x0F bytes, Z13:
// 0x03 bytes, Z12/Z11: the shift counts.
#define Q6K4HALF(qlo, qho, zlo, zhi) \
	VMOVDQU64        qlo(SI), Z1 \
	VBROADCASTI64X4  qho(SI), Z3 \
	VPSRLVW  Z12, Z3, Z4 \
	VPANDQ   Z13, Z4, Z4 \
	VPSLLW   $4, Z4, Z4  \
	VPANDQ   Z14, Z1, zlo \
	VPORQ    Z4, zlo, zlo \
	VPSRLVW  Z11, Z3, Z4 \
	VPANDQ   Z13, Z4, Z4 \
	VPSLLW   $4, Z4, Z4  \
	VPSRLW   $4, Z1, zhi \
	VPANDQ   Z14, zhi, zhi \
	VPORQ    Z4, zhi, zhi

// Q6K4TOK leaves token (qs at q, 16-sums at b) of the super-block, as
// eight int32 lanes whose sum is dotQ6KGo's s-32c, in y.
#define Q6K4TOK(q, b, y) \
	VPMADDUBSW q, Z24, Z16 \
	VPMADDWD   Z20, Z16, Z16 \
	VPMADDUBSW 64+q, Z25, Z17 \
	VPDPWSSD   Z21, Z17, Z16 \
	VPMADDUBSW 128+q, Z26, Z17 \
	VPDPWSSD   Z22, Z17, Z16 \
	VPMADDUBSW 192+q, Z27, Z17 \
	VPDPWSSD   Z23, Z17, Z16 \
	VPMADDWD   b, Y10, Y17 \
	VPSLLD     $5, Y17, Y17 \
	VPSUBD     Z17, Z16, Z16 \
	VEXTRACTI64X4 $1, Z16, Y17 \
	VPADDD     Y17, Y16, y

// func q6kx4AVX512(w *byte, qs *int8, d *float32, bs *int16, qstride, dstride, bstride, nsb int, out *float32)
// out[t] = dotQ6KGo(row, token t) for the four tokens at qs, d, bs plus
// t times the strides (in elements).
TEXT ·q6kx4AVX512(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), BX
	MOVQ qstride+32(FP), R11
	MOVQ dstride+40(FP), R13
	SHLQ $2, R13
	MOVQ bstride+48(FP), R15
	SHLQ $1, R15
	MOVQ nsb+56(FP), CX
	LEAQ (R11)(R11*2), R12
	LEAQ (R13)(R13*2), R14
	LEAQ (R15)(R15*2), R10
	VPXORD X0, X0, X0
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z14
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z13
	LEAQ q6k4shift<>(SB), R8
	VMOVDQU64 (R8), Z12
	VMOVDQU64 64(R8), Z11
	LEAQ q6k4perm<>(SB), R9
	VMOVDQU64 (R9), Z28
	VMOVDQU64 64(R9), Z29
	VMOVDQU64 128(R9), Z30
	VMOVDQU64 192(R9), Z31
	TESTQ CX, CX
	JZ   q6k4_done

q6k4_sb:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	Q6K4HALF(0, 128, Z24, Z25)
	Q6K4HALF(64, 160, Z26, Z27)
	VPMOVSXBW 192(SI), Y10
	VPERMW Z10, Z28, Z20
	VPERMW Z10, Z29, Z21
	VPERMW Z10, Z30, Z22
	VPERMW Z10, Z31, Z23
	Q6K4TOK(0(DI), (BX), Y4)
	Q6K4TOK(0(DI)(R11*1), (BX)(R15*1), Y5)
	Q6K4TOK(0(DI)(R11*2), (BX)(R15*2), Y6)
	Q6K4TOK(0(DI)(R12*1), (BX)(R10*1), Y7)
	VPHADDD Y5, Y4, Y8
	VPHADDD Y7, Y6, Y9
	VPHADDD Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VCVTDQ2PS X8, X8
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, X6
	VMOVSS (DX), X9
	VINSERTPS $0x10, (DX)(R13*1), X9, X9
	VINSERTPS $0x20, (DX)(R13*2), X9, X9
	VINSERTPS $0x30, (DX)(R14*1), X9, X9
	VMULPS X6, X9, X9
	VMULPS X9, X8, X8
	VADDPS X8, X0, X0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q6k4_sb

q6k4_done:
	MOVQ out+64(FP), AX
	VMOVUPS X0, (AX)
	VZEROUPPER
	RET
