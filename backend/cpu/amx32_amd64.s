//go:build linux && !purego

#include "textflag.h"
#include "amx_amd64.h"

// q80AMX32's tiles (amxConfigs32): 0 and 4 the two token tiles' sums for
// even blocks, 6 and 7 for odd ones; 1 and 5 the two tiles' activations,
// 2 the block's weights, 3 the -128s. Only the sums have two sets: the
// next block's loads into 1, 2 and 5 come a block's float work after the
// products that read them.
// tmm1 <- rows at DI (+32), tmm5 <- rows at R11 (+32), BX bytes apart
#define T32LOAD_A0  BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x1f
#define T32LOAD_A0N BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x1f; BYTE $0x20
#define T32LOAD_A1  BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x1b
#define T32LOAD_A1N BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x6c; BYTE $0x1b; BYTE $0x20
// tmm2 <- rows at SI+32 (+544), CX bytes apart
#define T32LOAD_B   BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x54; BYTE $0x0e; BYTE $0x20
#define T32LOAD_BN  BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x94; BYTE $0x0e; BYTE $0x40; BYTE $0x02; BYTE $0x00; BYTE $0x00
// tmm3 <- 8 rows of the 64 bytes at AX, DX (zero) bytes apart: amxm128
#define T32LOAD_M128 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x10
#define T32ZERO_T4  BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xe0
#define T32ZERO_T6  BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xf0
#define T32ZERO_T7  BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xf8
// tmm0 += tmm1.tmm3, tmm1.tmm2; tmm4 += tmm5.tmm3, tmm5.tmm2
#define T32DOT_EVEN BYTE $0xc4; BYTE $0xe2; BYTE $0x63; BYTE $0x5e; BYTE $0xc1; BYTE $0xc4; BYTE $0xe2; BYTE $0x6a; BYTE $0x5e; BYTE $0xc1; BYTE $0xc4; BYTE $0xe2; BYTE $0x63; BYTE $0x5e; BYTE $0xe5; BYTE $0xc4; BYTE $0xe2; BYTE $0x6a; BYTE $0x5e; BYTE $0xe5
// tmm6 += tmm1.tmm3, tmm1.tmm2; tmm7 += tmm5.tmm3, tmm5.tmm2
#define T32DOT_ODD  BYTE $0xc4; BYTE $0xe2; BYTE $0x63; BYTE $0x5e; BYTE $0xf1; BYTE $0xc4; BYTE $0xe2; BYTE $0x6a; BYTE $0x5e; BYTE $0xf1; BYTE $0xc4; BYTE $0xe2; BYTE $0x63; BYTE $0x5e; BYTE $0xfd; BYTE $0xc4; BYTE $0xe2; BYTE $0x6a; BYTE $0x5e; BYTE $0xfd
// rows at 1024(AX) <- tmm4; at DX and 1024(DX) <- tmm6, tmm7; CX bytes apart
#define T32STORE_T4 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0xa4; BYTE $0x08; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00
#define T32STORE_T6 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x34; BYTE $0x0a
#define T32STORE_T7 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0xbc; BYTE $0x0a; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00

// T32EVEN and T32ODD: the products of the block at SI (DI, R11) plus off
// into the even or odd set of sums, stored at AX or DX.
#define T32EVEN(a0, a1, b) \
	a0 \
	a1 \
	b \
	TILEZERO_T0 \
	T32ZERO_T4 \
	T32DOT_EVEN \
	TILESTORED_AX_CX_T0 \
	T32STORE_T4

#define T32ODD \
	T32LOAD_A0N \
	T32LOAD_A1N \
	T32LOAD_BN \
	T32ZERO_T6 \
	T32ZERO_T7 \
	T32DOT_ODD \
	T32STORE_T6 \
	T32STORE_T7

// T32TOK adds token i of a tile (n of them, in R15 or R12) from its row
// of sums at off(buf) times the scales into acc, as AMXTOK; past the
// last it leaves for exit.
#define T32TOK(n, off, buf, exit, i, acc) \
	CMPQ n, $i \
	JEQ  exit \
	VCVTDQ2PS    (off+i*64)(buf), Z21 \
	VMULPS.BCST  (R13), Z20, Z22 \
	VMULPS       Z22, Z21, Z21 \
	VADDPS       Z21, acc, acc \
	ADDQ R9, R13

// T32TOKM is T32TOK for the second tile's last three tokens, whose
// accumulators are in the frame at m (no register is left for them).
#define T32TOKM(buf, exit, i, m) \
	CMPQ R12, $i \
	JEQ  exit \
	VCVTDQ2PS    (1024+i*64)(buf), Z21 \
	VMULPS.BCST  (R13), Z20, Z22 \
	VMULPS       Z22, Z21, Z21 \
	VADDPS       m(SP), Z21, Z21 \
	VMOVUPS      Z21, m(SP) \
	ADDQ R9, R13

// T32BLOCK is a block's float work, both tiles, from the sums at buf.
#define T32BLOCK(buf, mid, exit) \
	PREFETCHT0 2176(SI) \
	PREFETCHT0 2240(SI) \
	PREFETCHT0 2304(SI) \
	PREFETCHT0 2368(SI) \
	PREFETCHT0 2432(SI) \
	PREFETCHT0 2496(SI) \
	PREFETCHT0 2560(SI) \
	PREFETCHT0 2624(SI) \
	PREFETCHT0 2688(SI) \
	VCVTPH2PS (SI), Z20 \
	MOVQ R10, R13 \
	T32TOK(R15, 0, buf, mid, 0, Z0) \
	T32TOK(R15, 0, buf, mid, 1, Z1) \
	T32TOK(R15, 0, buf, mid, 2, Z2) \
	T32TOK(R15, 0, buf, mid, 3, Z3) \
	T32TOK(R15, 0, buf, mid, 4, Z4) \
	T32TOK(R15, 0, buf, mid, 5, Z5) \
	T32TOK(R15, 0, buf, mid, 6, Z6) \
	T32TOK(R15, 0, buf, mid, 7, Z7) \
	T32TOK(R15, 0, buf, mid, 8, Z8) \
	T32TOK(R15, 0, buf, mid, 9, Z9) \
	T32TOK(R15, 0, buf, mid, 10, Z10) \
	T32TOK(R15, 0, buf, mid, 11, Z11) \
	T32TOK(R15, 0, buf, mid, 12, Z12) \
	T32TOK(R15, 0, buf, mid, 13, Z13) \
	T32TOK(R15, 0, buf, mid, 14, Z14) \
	T32TOK(R15, 0, buf, mid, 15, Z15) \
mid: \
	T32TOK(R12, 1024, buf, exit, 0, Z16) \
	T32TOK(R12, 1024, buf, exit, 1, Z17) \
	T32TOK(R12, 1024, buf, exit, 2, Z18) \
	T32TOK(R12, 1024, buf, exit, 3, Z19) \
	T32TOK(R12, 1024, buf, exit, 4, Z23) \
	T32TOK(R12, 1024, buf, exit, 5, Z24) \
	T32TOK(R12, 1024, buf, exit, 6, Z25) \
	T32TOK(R12, 1024, buf, exit, 7, Z26) \
	T32TOK(R12, 1024, buf, exit, 8, Z27) \
	T32TOK(R12, 1024, buf, exit, 9, Z28) \
	T32TOK(R12, 1024, buf, exit, 10, Z29) \
	T32TOK(R12, 1024, buf, exit, 11, Z30) \
	T32TOK(R12, 1024, buf, exit, 12, Z31) \
	T32TOKM(buf, exit, 13, 4096) \
	T32TOKM(buf, exit, 14, 4160) \
	T32TOKM(buf, exit, 15, 4224)

#define T32NEXT \
	ADDQ $544, SI \
	ADDQ $32, DI \
	ADDQ $32, R11 \
	ADDQ $4, R10 \
	DECQ R14

// T32OUT stores a token's results (n tokens in the tile) at DI.
#define T32OUT(n, exit, i, acc) \
	CMPQ n, $i \
	JEQ  exit \
	VMOVUPS acc, (DI) \
	ADDQ BX, DI

#define T32OUTM(exit, i, m) \
	CMPQ R12, $i \
	JEQ  exit \
	VMOVUPS m(SP), Z21 \
	VMOVUPS Z21, (DI) \
	ADDQ BX, DI

// func q80AMX32(cfg *byte, w *byte, qs *int8, d *float32, qstride, dstride, nb, n0, n1 int, out *float32, ostride int)
// q80AMX16 for two tiles of tokens (n0 then n1, each 1 to 16) that share
// each block's weights: a pass of 17 to 32 tokens loads a block's weights
// once, so a group streamed from memory is read at half q80AMX16's rate
// per product. Each token's integers and float work are q80AMX16's.
TEXT ·q80AMX32(SB), 0, $4288-88
	AMXQ80ARGS
	MOVQ n0+56(FP), R15
	MOVQ n1+64(FP), R12
	MOVQ R15, R11
	IMULQ BX, R11
	ADDQ DI, R11
	MOVQ $64, CX
	LEAQ ·amxm128(SB), AX
	XORQ DX, DX
	T32LOAD_M128
	LEAQ 0(SP), AX
	LEAQ 2048(SP), DX
	AMXZERO16
	VMOVDQA32 Z0, Z16
	VMOVDQA32 Z0, Z17
	VMOVDQA32 Z0, Z18
	VMOVDQA32 Z0, Z19
	VMOVDQA32 Z0, Z23
	VMOVDQA32 Z0, Z24
	VMOVDQA32 Z0, Z25
	VMOVDQA32 Z0, Z26
	VMOVDQA32 Z0, Z27
	VMOVDQA32 Z0, Z28
	VMOVDQA32 Z0, Z29
	VMOVDQA32 Z0, Z30
	VMOVDQA32 Z0, Z31
	VMOVUPS Z0, 4096(SP)
	VMOVUPS Z0, 4160(SP)
	VMOVUPS Z0, 4224(SP)

	T32EVEN(T32LOAD_A0, T32LOAD_A1, T32LOAD_B)

t32_even:
	CMPQ R14, $1
	JEQ  t32_even_sums
	T32ODD

t32_even_sums:
	T32BLOCK(AX, t32_even_mid, t32_even_next)

t32_even_next:
	T32NEXT
	JZ   t32_end
	CMPQ R14, $1
	JEQ  t32_odd_sums
	T32EVEN(T32LOAD_A0N, T32LOAD_A1N, T32LOAD_BN)

t32_odd_sums:
	T32BLOCK(DX, t32_odd_mid, t32_odd_next)

t32_odd_next:
	T32NEXT
	JNZ  t32_even

t32_end:
	TILERELEASE
	MOVQ out+72(FP), DI
	MOVQ ostride+80(FP), BX
	SHLQ $2, BX
	T32OUT(R15, t32_out1, 0, Z0)
	T32OUT(R15, t32_out1, 1, Z1)
	T32OUT(R15, t32_out1, 2, Z2)
	T32OUT(R15, t32_out1, 3, Z3)
	T32OUT(R15, t32_out1, 4, Z4)
	T32OUT(R15, t32_out1, 5, Z5)
	T32OUT(R15, t32_out1, 6, Z6)
	T32OUT(R15, t32_out1, 7, Z7)
	T32OUT(R15, t32_out1, 8, Z8)
	T32OUT(R15, t32_out1, 9, Z9)
	T32OUT(R15, t32_out1, 10, Z10)
	T32OUT(R15, t32_out1, 11, Z11)
	T32OUT(R15, t32_out1, 12, Z12)
	T32OUT(R15, t32_out1, 13, Z13)
	T32OUT(R15, t32_out1, 14, Z14)
	T32OUT(R15, t32_out1, 15, Z15)

t32_out1:
	T32OUT(R12, t32_done, 0, Z16)
	T32OUT(R12, t32_done, 1, Z17)
	T32OUT(R12, t32_done, 2, Z18)
	T32OUT(R12, t32_done, 3, Z19)
	T32OUT(R12, t32_done, 4, Z23)
	T32OUT(R12, t32_done, 5, Z24)
	T32OUT(R12, t32_done, 6, Z25)
	T32OUT(R12, t32_done, 7, Z26)
	T32OUT(R12, t32_done, 8, Z27)
	T32OUT(R12, t32_done, 9, Z28)
	T32OUT(R12, t32_done, 10, Z29)
	T32OUT(R12, t32_done, 11, Z30)
	T32OUT(R12, t32_done, 12, Z31)
	T32OUTM(t32_done, 13, 4096)
	T32OUTM(t32_done, 14, 4160)
	T32OUTM(t32_done, 15, 4224)

t32_done:
	VZEROUPPER
	RET
