//go:build linux && !purego

#include "textflag.h"
#include "amx_amd64.h"
#include "amxk_amd64.h"
#include "int8rows_amd64.h"
#include "int8rowsk_amd64.h"

// Q4_K and Q5_K on AMX (amxk_linux_amd64.go). The tile instructions by their
// bytes, as in amx_amd64.s: tmm0-2 the sums (low scale bits, high scale
// bits, mins), tmm3 the activations, tmm4-6 the expanded weights.

// QKXNIB(off) gathers dword off of the sixteen rows (Z17: their offsets):
// its low nibbles in Z0, its high ones in Z1.
#define QKXNIB(off) \
	KXNORW     K1, K1, K1 \
	VPGATHERDD off(SI)(Z17*1), K1, Z0 \
	VPSRLD     $4, Z0, Z1 \
	VPANDD     Z16, Z0, Z0 \
	VPANDD     Z16, Z1, Z1

// Q5XBITS(qhoff, c) ORs chunk c's fifth bits into them: bits 2c and 2c+1
// of each byte of the rows' qh dword at qhoff (Z20: 0x01 in every byte).
#define Q5XBITS(qhoff, c) \
	KXNORW     K1, K1, K1 \
	VPGATHERDD qhoff(SI)(Z17*1), K1, Z4 \
	VPSRLD     $(2*c), Z4, Z5 \
	VPANDD     Z20, Z5, Z5 \
	VPSLLD     $4, Z5, Z5 \
	VPORD      Z5, Z0, Z0 \
	VPSRLD     $(2*c+1), Z4, Z5 \
	VPANDD     Z20, Z5, Z5 \
	VPSLLD     $4, Z5, Z5 \
	VPORD      Z5, Z1, Z1

// QKXMUL(o) writes the low values times the low scale bits (Z12) and the
// high bits (Z13) to tile rows o and o+1024, the high values times Z14
// and Z15 to the rows 512 bytes on (the next sub-block). At most 31 x 7:
// no carry between the bytes of a word.
#define QKXMUL(o) \
	VPMULLW    Z12, Z0, Z2 \
	VPMULLW    Z13, Z0, Z3 \
	VMOVDQU32  Z2, o(DI) \
	VMOVDQU32  Z3, (o+1024)(DI) \
	VPMULLW    Z14, Z1, Z2 \
	VPMULLW    Z15, Z1, Z3 \
	VMOVDQU32  Z2, (o+512)(DI) \
	VMOVDQU32  Z3, (o+1536)(DI)

// QKXDW(off, o): Q4_K's dword off of the rows to tile rows o.
#define QKXDW(off, o) \
	QKXNIB(off) \
	QKXMUL(o)

// Q5XDW(off, qhoff, c, o): Q5_K's, with its fifth bits at qhoff.
#define Q5XDW(off, qhoff, c, o) \
	QKXNIB(off) \
	Q5XBITS(qhoff, c) \
	QKXMUL(o)

// QKXREP(zs, zl, zh) splits the scales zs into their low three bits and
// high three, each repeated in both words of its dword.
#define QKXREP(zs, zl, zh) \
	VPANDD Z19, zs, zl \
	VPSLLD $16, zl, Z18 \
	VPORD  Z18, zl, zl \
	VPSRLD $3, zs, zh \
	VPSLLD $16, zh, Z18 \
	VPORD  Z18, zh, zh

// QKXMIN(zm) repeats the mins zm in every byte of their dwords.
#define QKXMIN(zm) \
	VPSLLD $8, zm, Z18 \
	VPORD  Z18, zm, zm \
	VPSLLD $16, zm, Z18 \
	VPORD  Z18, zm, zm

// QKXSCALES splits chunk c's scales (Z8, Z9) into their bits (Z12-Z15)
// and repeats its mins (Z10, Z11) in every byte.
#define QKXSCALES \
	QKXREP(Z8, Z12, Z13) \
	QKXREP(Z9, Z14, Z15) \
	QKXMIN(Z10) \
	QKXMIN(Z11)

// QKXMINS(c) writes chunk c's min tiles.
#define QKXMINS(c) \
	VMOVDQU32 Z10, (3072*c+2048)(DI) \
	VMOVDQU32 Z10, (3072*c+2112)(DI) \
	VMOVDQU32 Z10, (3072*c+2176)(DI) \
	VMOVDQU32 Z10, (3072*c+2240)(DI) \
	VMOVDQU32 Z10, (3072*c+2304)(DI) \
	VMOVDQU32 Z10, (3072*c+2368)(DI) \
	VMOVDQU32 Z10, (3072*c+2432)(DI) \
	VMOVDQU32 Z10, (3072*c+2496)(DI) \
	VMOVDQU32 Z11, (3072*c+2560)(DI) \
	VMOVDQU32 Z11, (3072*c+2624)(DI) \
	VMOVDQU32 Z11, (3072*c+2688)(DI) \
	VMOVDQU32 Z11, (3072*c+2752)(DI) \
	VMOVDQU32 Z11, (3072*c+2816)(DI) \
	VMOVDQU32 Z11, (3072*c+2880)(DI) \
	VMOVDQU32 Z11, (3072*c+2944)(DI) \
	VMOVDQU32 Z11, (3072*c+3008)(DI)

// QKXCHUNK(c) writes Q4_K's chunk c's tiles (sub-blocks 2c and 2c+1:
// scales in Z8, Z9, mins in Z10, Z11).
#define QKXCHUNK(c) \
	QKXSCALES \
	QKXDW(16+32*c, 3072*c) \
	QKXDW(20+32*c, 3072*c+64) \
	QKXDW(24+32*c, 3072*c+128) \
	QKXDW(28+32*c, 3072*c+192) \
	QKXDW(32+32*c, 3072*c+256) \
	QKXDW(36+32*c, 3072*c+320) \
	QKXDW(40+32*c, 3072*c+384) \
	QKXDW(44+32*c, 3072*c+448) \
	QKXMINS(c)

// Q5XCHUNK(c) is QKXCHUNK for Q5_K: nibbles from byte 48, qh at 16.
#define Q5XCHUNK(c) \
	QKXSCALES \
	Q5XDW(48+32*c, 16, c, 3072*c) \
	Q5XDW(52+32*c, 20, c, 3072*c+64) \
	Q5XDW(56+32*c, 24, c, 3072*c+128) \
	Q5XDW(60+32*c, 28, c, 3072*c+192) \
	Q5XDW(64+32*c, 32, c, 3072*c+256) \
	Q5XDW(68+32*c, 36, c, 3072*c+320) \
	Q5XDW(72+32*c, 40, c, 3072*c+384) \
	Q5XDW(76+32*c, 44, c, 3072*c+448) \
	QKXMINS(c)

// func kExpandAMX(w *byte, rb, nsb int, e *byte, dd *float32, size int)
// Sixteen Q4_K rows (size 144; Q5_K: 176, with each value's fifth bit) rb bytes apart to the three weight tiles of each
// 64 values: value k of row n, times its sub-block's scale's low three
// bits, at tile row k/4 of chunk k/64, bytes 4n + k%4; the same times the
// high bits a kilobyte on; the sub-block's min a kilobyte more. A row's
// four values share a dword, so one gather of dword i of each row's 32
// bytes of nibbles gives rows i (low nibbles) and 8+i (high) of a tile,
// and a word multiply by the scale bits (at most 15 x 7: no carry between
// the bytes) the tile's bytes. dd: each super-block's sixteen d, then its
// sixteen dmin, as floats.
TEXT ·kExpandAMX(SB), NOSPLIT, $0-48
	AMXKEXPAND
	MOVL $7, AX
	VPBROADCASTD AX, Z19
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z20
	MOVQ size+40(FP), R8

kx_sb:
	KXNORW     K1, K1, K1
	VPGATHERDD (SI)(Z17*1), K1, Z6
	VPMOVDW    Z6, Y7
	VCVTPH2PS  Y7, Z7
	VMOVUPS    Z7, (DX)
	VPSRLD     $16, Z6, Z6
	VPMOVDW    Z6, Y7
	VCVTPH2PS  Y7, Z7
	VMOVUPS    Z7, 64(DX)
	KXNORW     K1, K1, K1
	VPGATHERDD 4(SI)(Z17*1), K1, Z24
	KXNORW     K1, K1, K1
	VPGATHERDD 8(SI)(Z17*1), K1, Z25
	KXNORW     K1, K1, K1
	VPGATHERDD 12(SI)(Z17*1), K1, Z26
	Q4KSCLO(0, Z24, Z25, Z8, Z10)
	Q4KSCLO(1, Z24, Z25, Z9, Z11)
	CMPQ R8, $144
	JNE  kx_five0
	QKXCHUNK(0)
	JMP  kx_done0

kx_five0:
	Q5XCHUNK(0)

kx_done0:
	Q4KSCLO(2, Z24, Z25, Z8, Z10)
	Q4KSCLO(3, Z24, Z25, Z9, Z11)
	CMPQ R8, $144
	JNE  kx_five1
	QKXCHUNK(1)
	JMP  kx_done1

kx_five1:
	Q5XCHUNK(1)

kx_done1:
	Q4KSCHI(0, Z24, Z25, Z26, Z27, Z8, Z10)
	Q4KSCHI(1, Z24, Z25, Z26, Z27, Z9, Z11)
	CMPQ R8, $144
	JNE  kx_five2
	QKXCHUNK(2)
	JMP  kx_done2

kx_five2:
	Q5XCHUNK(2)

kx_done2:
	Q4KSCHI(2, Z24, Z25, Z26, Z27, Z8, Z10)
	Q4KSCHI(3, Z24, Z25, Z26, Z27, Z9, Z11)
	CMPQ R8, $144
	JNE  kx_five3
	QKXCHUNK(3)
	JMP  kx_done3

kx_five3:
	Q5XCHUNK(3)

kx_done3:
	ADDQ R8, SI
	ADDQ $12288, DI
	ADDQ $128, DX
	DECQ CX
	JNZ  kx_sb
	VZEROUPPER
	RET

// AMXKCHUNK adds one chunk of 64 values to the three sums: the tokens'
// activations at R8 (rows BX apart), the chunk's tiles at SI; then steps
// both to the next chunk.
#define AMXKCHUNK \
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x18 \ // tileloadd tmm3, (R8)(BX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x0e \ // tileloadd tmm4, (SI)(CX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x0e; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 \ // tileloadd tmm5, 1024(SI)(CX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xb4; BYTE $0x0e; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 \ // tileloadd tmm6, 2048(SI)(CX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x5a; BYTE $0x5e; BYTE $0xc3 \ // tdpbsud tmm0, tmm3, tmm4
	BYTE $0xc4; BYTE $0xe2; BYTE $0x52; BYTE $0x5e; BYTE $0xcb \ // tdpbsud tmm1, tmm3, tmm5
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5e; BYTE $0xd3 \ // tdpbsud tmm2, tmm3, tmm6
	ADDQ $64, R8 \
	ADDQ $3072, SI

// func q4kAMX(cfg *byte, e *byte, dd *float32, qs *int8, d *float32, qstride, dstride, nsb, ntok, r int, acc *float32, astride int)
// Sixteen rows expanded by q4kExpandAMX (e; dd: each super-block's sixteen
// d then sixteen dmin) against ntok tokens' q8_K activations (qs, rows
// qstride bytes apart; d their scales, dstride apart), r tokens a tile (the
// last tile ends at ntok and skips the tokens the one before took): per
// super-block, while its 12 KiB of tiles stay in L1, every token tile's
// twelve products give the three sums, and each token's are scaled into
// acc (16 floats a token, astride bytes apart: the output's rows where the
// group is whole; zeroed here first) as dotKRowGo does: S =
// low + 8 high, acc + (d_a d) S, then less (d_a dmin) times the mins' sum
// (minus dotKRowGo's M; the negation is exact).
TEXT ·q4kAMX(SB), 0, $3072-96
	AMXKSETUP(q4ka_zero)

q4ka_sb:
	VMOVUPS (DX), Z19
	VMOVUPS 64(DX), Z20
	XORQ R15, R15

q4ka_tile:
	AMXKTILE
	TILEZERO_T0
	TILEZERO_T1
	TILEZERO_T2
	AMXKCHUNK
	AMXKCHUNK
	AMXKCHUNK
	AMXKCHUNK
	SUBQ $12288, SI
	TILESTORED_AX_CX_T0
	TILESTORED_AX1K_CX_T1
	TILESTORED_AX2K_CX_T2
	AMXKTOKS

q4ka_tok:
	VPSLLD       $3, 1024(AX)(R8*1), Z16
	VPADDD       (AX)(R8*1), Z16, Z16
	VCVTDQ2PS    Z16, Z16
	VBROADCASTSS (R13), Z17
	VMULPS       Z19, Z17, Z18
	VMULPS       Z18, Z16, Z16
	VADDPS       (R11), Z16, Z16
	VCVTDQ2PS    2048(AX)(R8*1), Z21
	VMULPS       Z20, Z17, Z18
	VMULPS       Z18, Z21, Z21
	VSUBPS       Z21, Z16, Z16
	VMOVUPS      Z16, (R11)
	AMXKTOKNEXT(q4ka_tok)

	AMXKNEXT(q4ka_tile, q4ka_sb, 12288, 128)

	TILERELEASE
	VZEROUPPER
	RET
