//go:build linux && !purego

#include "textflag.h"
#include "amx_amd64.h"
#include "amxk_amd64.h"

// Q6_K on AMX (amxk_linux_amd64.go). A super-block's sixteen signed 8-bit
// scales, one per 16 values, do not fit a byte tile beside the values, so
// each scale is split into base-4 digits, sc = p0 + 4 p1 + 16 p2 + 64 p3
// (p3, the top two bits, signed: -2..1), and each group of sixteen rows is
// expanded once per matmul into four byte tiles per 64 values: the values
// less 32 (-32..31) times one digit (at most 96 in magnitude: a signed
// byte). Their four signed products (tdpbssd) give dotQ6KGo's exact
// integer per super-block, S = C0 + 4 C1 + 16 C2 + 64 C3, offset included.

// q6xrep<>+64b: VPSHUFB controls that repeat byte b of each dword in all
// four of its bytes.
DATA q6xrep<>+0(SB)/8, $0x0404040400000000
DATA q6xrep<>+8(SB)/8, $0x0c0c0c0c08080808
DATA q6xrep<>+16(SB)/8, $0x0404040400000000
DATA q6xrep<>+24(SB)/8, $0x0c0c0c0c08080808
DATA q6xrep<>+32(SB)/8, $0x0404040400000000
DATA q6xrep<>+40(SB)/8, $0x0c0c0c0c08080808
DATA q6xrep<>+48(SB)/8, $0x0404040400000000
DATA q6xrep<>+56(SB)/8, $0x0c0c0c0c08080808
DATA q6xrep<>+64(SB)/8, $0x0505050501010101
DATA q6xrep<>+72(SB)/8, $0x0d0d0d0d09090909
DATA q6xrep<>+80(SB)/8, $0x0505050501010101
DATA q6xrep<>+88(SB)/8, $0x0d0d0d0d09090909
DATA q6xrep<>+96(SB)/8, $0x0505050501010101
DATA q6xrep<>+104(SB)/8, $0x0d0d0d0d09090909
DATA q6xrep<>+112(SB)/8, $0x0505050501010101
DATA q6xrep<>+120(SB)/8, $0x0d0d0d0d09090909
DATA q6xrep<>+128(SB)/8, $0x0606060602020202
DATA q6xrep<>+136(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA q6xrep<>+144(SB)/8, $0x0606060602020202
DATA q6xrep<>+152(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA q6xrep<>+160(SB)/8, $0x0606060602020202
DATA q6xrep<>+168(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA q6xrep<>+176(SB)/8, $0x0606060602020202
DATA q6xrep<>+184(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA q6xrep<>+192(SB)/8, $0x0707070703030303
DATA q6xrep<>+200(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA q6xrep<>+208(SB)/8, $0x0707070703030303
DATA q6xrep<>+216(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA q6xrep<>+224(SB)/8, $0x0707070703030303
DATA q6xrep<>+232(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA q6xrep<>+240(SB)/8, $0x0707070703030303
DATA q6xrep<>+248(SB)/8, $0x0f0f0f0f0b0b0b0b
GLOBL q6xrep<>(SB), RODATA|NOPTR, $256

// q6xbit<>+64b: bit b in every byte (VPTESTMB picks the scale bytes that
// have it).
DATA q6xbit<>+0(SB)/8, $0x0101010101010101
DATA q6xbit<>+8(SB)/8, $0x0101010101010101
DATA q6xbit<>+16(SB)/8, $0x0101010101010101
DATA q6xbit<>+24(SB)/8, $0x0101010101010101
DATA q6xbit<>+32(SB)/8, $0x0101010101010101
DATA q6xbit<>+40(SB)/8, $0x0101010101010101
DATA q6xbit<>+48(SB)/8, $0x0101010101010101
DATA q6xbit<>+56(SB)/8, $0x0101010101010101
DATA q6xbit<>+64(SB)/8, $0x0202020202020202
DATA q6xbit<>+72(SB)/8, $0x0202020202020202
DATA q6xbit<>+80(SB)/8, $0x0202020202020202
DATA q6xbit<>+88(SB)/8, $0x0202020202020202
DATA q6xbit<>+96(SB)/8, $0x0202020202020202
DATA q6xbit<>+104(SB)/8, $0x0202020202020202
DATA q6xbit<>+112(SB)/8, $0x0202020202020202
DATA q6xbit<>+120(SB)/8, $0x0202020202020202
DATA q6xbit<>+128(SB)/8, $0x0404040404040404
DATA q6xbit<>+136(SB)/8, $0x0404040404040404
DATA q6xbit<>+144(SB)/8, $0x0404040404040404
DATA q6xbit<>+152(SB)/8, $0x0404040404040404
DATA q6xbit<>+160(SB)/8, $0x0404040404040404
DATA q6xbit<>+168(SB)/8, $0x0404040404040404
DATA q6xbit<>+176(SB)/8, $0x0404040404040404
DATA q6xbit<>+184(SB)/8, $0x0404040404040404
DATA q6xbit<>+192(SB)/8, $0x0808080808080808
DATA q6xbit<>+200(SB)/8, $0x0808080808080808
DATA q6xbit<>+208(SB)/8, $0x0808080808080808
DATA q6xbit<>+216(SB)/8, $0x0808080808080808
DATA q6xbit<>+224(SB)/8, $0x0808080808080808
DATA q6xbit<>+232(SB)/8, $0x0808080808080808
DATA q6xbit<>+240(SB)/8, $0x0808080808080808
DATA q6xbit<>+248(SB)/8, $0x0808080808080808
DATA q6xbit<>+256(SB)/8, $0x1010101010101010
DATA q6xbit<>+264(SB)/8, $0x1010101010101010
DATA q6xbit<>+272(SB)/8, $0x1010101010101010
DATA q6xbit<>+280(SB)/8, $0x1010101010101010
DATA q6xbit<>+288(SB)/8, $0x1010101010101010
DATA q6xbit<>+296(SB)/8, $0x1010101010101010
DATA q6xbit<>+304(SB)/8, $0x1010101010101010
DATA q6xbit<>+312(SB)/8, $0x1010101010101010
DATA q6xbit<>+320(SB)/8, $0x2020202020202020
DATA q6xbit<>+328(SB)/8, $0x2020202020202020
DATA q6xbit<>+336(SB)/8, $0x2020202020202020
DATA q6xbit<>+344(SB)/8, $0x2020202020202020
DATA q6xbit<>+352(SB)/8, $0x2020202020202020
DATA q6xbit<>+360(SB)/8, $0x2020202020202020
DATA q6xbit<>+368(SB)/8, $0x2020202020202020
DATA q6xbit<>+376(SB)/8, $0x2020202020202020
DATA q6xbit<>+384(SB)/8, $0x4040404040404040
DATA q6xbit<>+392(SB)/8, $0x4040404040404040
DATA q6xbit<>+400(SB)/8, $0x4040404040404040
DATA q6xbit<>+408(SB)/8, $0x4040404040404040
DATA q6xbit<>+416(SB)/8, $0x4040404040404040
DATA q6xbit<>+424(SB)/8, $0x4040404040404040
DATA q6xbit<>+432(SB)/8, $0x4040404040404040
DATA q6xbit<>+440(SB)/8, $0x4040404040404040
DATA q6xbit<>+448(SB)/8, $0x8080808080808080
DATA q6xbit<>+456(SB)/8, $0x8080808080808080
DATA q6xbit<>+464(SB)/8, $0x8080808080808080
DATA q6xbit<>+472(SB)/8, $0x8080808080808080
DATA q6xbit<>+480(SB)/8, $0x8080808080808080
DATA q6xbit<>+488(SB)/8, $0x8080808080808080
DATA q6xbit<>+496(SB)/8, $0x8080808080808080
DATA q6xbit<>+504(SB)/8, $0x8080808080808080
GLOBL q6xbit<>(SB), RODATA|NOPTR, $512

// Q6XVAL(v, qhshift): v (a quarter's nibbles) with bits qhshift and
// qhshift+1 of the qh dwords in Z23 above them, less 32. Z18: 0x03
// bytes, Z19: 0x20.
#define Q6XVAL(v, qhshift) \
	VPSRLD     $(qhshift), Z23, Z28 \
	VPANDD     Z18, Z28, Z28 \
	VPSLLD     $4, Z28, Z28 \
	VPORD      Z28, v, v \
	VPSUBB     Z19, v, v

// Q6XLOAD(qla, qlb, qh, v0, v1, v2, v3): one dword of each of the sixteen
// rows (Z17: their offsets) at ql offsets qla and qlb (= qla+32) and qh
// offset qh, decoded into the four quarters' values less 32: v_g holds
// values 32g + l..l+3 of the half. Z16: 0x0f bytes.
#define Q6XLOAD(qla, qlb, qh, v0, v1, v2, v3) \
	KXNORW     K1, K1, K1 \
	VPGATHERDD qla(SI)(Z17*1), K1, Z21 \
	KXNORW     K1, K1, K1 \
	VPGATHERDD qlb(SI)(Z17*1), K1, Z22 \
	KXNORW     K1, K1, K1 \
	VPGATHERDD qh(SI)(Z17*1), K1, Z23 \
	VPANDD     Z16, Z21, v0 \
	Q6XVAL(v0, 0) \
	VPANDD     Z16, Z22, v1 \
	Q6XVAL(v1, 2) \
	VPSRLD     $4, Z21, v2 \
	VPANDD     Z16, v2, v2 \
	Q6XVAL(v2, 4) \
	VPSRLD     $4, Z22, v3 \
	VPANDD     Z16, v3, v3 \
	Q6XVAL(v3, 6)

// Q6XDIGIT(v, v2, o, add): v times the digit whose bits K2 (low) and K3
// (high; its weight is -2 for the signed top digit: add VPSUBB) mark, to
// the tile row at o(DI); v2 = v+v.
#define Q6XDIGIT(v, v2, o, add) \
	VMOVDQU8.Z v, K2, Z31 \
	add        v2, Z31, K3, Z31 \
	VMOVDQU64  Z31, o(DI)

// Q6XPART(p, o, add): digit p of the scale in Z29 for the four values
// v(l, g) in Z0-Z15 (the quarter's, doubled in Z20-Z23): tile rows o,
// o+64, o+128, o+192 of digit p's tile.
#define Q6XPART(p, vA, vB, vC, vD, o, add) \
	VPTESTMB  q6xbit<>+(128*(p))(SB), Z29, K2 \
	VPTESTMB  q6xbit<>+(128*(p)+64)(SB), Z29, K3 \
	Q6XDIGIT(vA, Z20, (o+1024*(p)), add) \
	Q6XDIGIT(vB, Z21, (o+1024*(p)+64), add) \
	Q6XDIGIT(vC, Z22, (o+1024*(p)+128), add) \
	Q6XDIGIT(vD, Z23, (o+1024*(p)+192), add)

// Q6XQUARTER(sc, b, vA, vB, vC, vD, o): the four digit tiles of one
// quarter's values (vA-vD: four dwords of each row, tile rows o on) under
// the scale in byte b of the dwords in sc.
#define Q6XQUARTER(sc, b, vA, vB, vC, vD, o) \
	VPSHUFB q6xrep<>+(64*(b))(SB), sc, Z29 \
	VPADDB  vA, vA, Z20 \
	VPADDB  vB, vB, Z21 \
	VPADDB  vC, vC, Z22 \
	VPADDB  vD, vD, Z23 \
	Q6XPART(0, vA, vB, vC, vD, o, VPADDB) \
	Q6XPART(1, vA, vB, vC, vD, o, VPADDB) \
	Q6XPART(2, vA, vB, vC, vD, o, VPADDB) \
	Q6XPART(3, vA, vB, vC, vD, o, VPSUBB)

// Q6XSIXTEENTH(h, q): values 128h + 32g + 16q + (0..15) for g = 0..3 (sub-blocks
// 8h + 2g + q): four dwords a row of each quarter, decoded once, then
// each quarter's digit tiles (chunk 2h + g/2, tile rows 8(g%2) + 4q on).
#define Q6XSIXTEENTH(h, q, sclo, schi) \
	Q6XLOAD((64*(h)+16*(q)), (64*(h)+32+16*(q)), (128+32*(h)+16*(q)), Z0, Z1, Z2, Z3) \
	Q6XLOAD((64*(h)+16*(q)+4), (64*(h)+36+16*(q)), (132+32*(h)+16*(q)), Z4, Z5, Z6, Z7) \
	Q6XLOAD((64*(h)+16*(q)+8), (64*(h)+40+16*(q)), (136+32*(h)+16*(q)), Z8, Z9, Z10, Z11) \
	Q6XLOAD((64*(h)+16*(q)+12), (64*(h)+44+16*(q)), (140+32*(h)+16*(q)), Z12, Z13, Z14, Z15) \
	Q6XQUARTER(sclo, (q), Z0, Z4, Z8, Z12, (8192*(h)+256*(q))) \
	Q6XQUARTER(sclo, (2+(q)), Z1, Z5, Z9, Z13, (8192*(h)+512+256*(q))) \
	Q6XQUARTER(schi, (q), Z2, Z6, Z10, Z14, (8192*(h)+4096+256*(q))) \
	Q6XQUARTER(schi, (2+(q)), Z3, Z7, Z11, Z15, (8192*(h)+4096+512+256*(q)))

// func q6kExpandAMX(w *byte, rb, nsb int, e *byte, dd *float32, size int)
// Sixteen Q6_K rows rb bytes apart to the four digit tiles of each 64
// values (16 KiB a super-block): value k of row n less 32, times digit p
// of its sub-block's scale, at byte 4n + k%4 of tile row (k%64)/4 of tile
// p of chunk k/64. dd: each super-block's sixteen d, as floats. size is
// unused (kExpandAMX's signature).
TEXT ·q6kExpandAMX(SB), NOSPLIT, $0-48
	AMXKEXPAND
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z18
	MOVL $0x20202020, AX
	VPBROADCASTD AX, Z19

q6x_sb:
	// d: the high word of the dword at 206 (the block ends at 210).
	KXNORW     K1, K1, K1
	VPGATHERDD 206(SI)(Z17*1), K1, Z20
	VPSRLD     $16, Z20, Z20
	VPMOVDW    Z20, Y20
	VCVTPH2PS  Y20, Z20
	VMOVUPS    Z20, (DX)
	KXNORW     K1, K1, K1
	VPGATHERDD 192(SI)(Z17*1), K1, Z24
	KXNORW     K1, K1, K1
	VPGATHERDD 196(SI)(Z17*1), K1, Z25
	KXNORW     K1, K1, K1
	VPGATHERDD 200(SI)(Z17*1), K1, Z26
	KXNORW     K1, K1, K1
	VPGATHERDD 204(SI)(Z17*1), K1, Z27
	Q6XSIXTEENTH(0, 0, Z24, Z25)
	Q6XSIXTEENTH(0, 1, Z24, Z25)
	Q6XSIXTEENTH(1, 0, Z26, Z27)
	Q6XSIXTEENTH(1, 1, Z26, Z27)
	ADDQ $210, SI
	ADDQ $16384, DI
	ADDQ $64, DX
	DECQ CX
	JNZ  q6x_sb
	VZEROUPPER
	RET

// AMXQ6CHUNK adds one chunk of 64 values to the four digit sums: the
// tokens' activations at R8 (rows BX apart), the chunk's tiles at SI; then
// steps both to the next chunk.
#define AMXQ6CHUNK \
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x18 \ // tileloadd tmm4, (R8)(BX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x0e \ // tileloadd tmm5, (SI)(CX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xb4; BYTE $0x0e; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 \ // tileloadd tmm6, 1024(SI)(CX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xbc; BYTE $0x0e; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 \ // tileloadd tmm7, 2048(SI)(CX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x53; BYTE $0x5e; BYTE $0xc4 \ // tdpbssd tmm0, tmm4, tmm5
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4b; BYTE $0x5e; BYTE $0xcc \ // tdpbssd tmm1, tmm4, tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x43; BYTE $0x5e; BYTE $0xd4 \ // tdpbssd tmm2, tmm4, tmm7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x0e; BYTE $0x00; BYTE $0x0c; BYTE $0x00; BYTE $0x00 \ // tileloadd tmm5, 3072(SI)(CX*1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x53; BYTE $0x5e; BYTE $0xdc \ // tdpbssd tmm3, tmm4, tmm5
	ADDQ $64, R8 \
	ADDQ $4096, SI

// func q6kAMX(cfg *byte, e *byte, dd *float32, qs *int8, d *float32, qstride, dstride, nsb, ntok, r int, acc *float32, astride int)
// q4kAMX for Q6_K: sixteen rows expanded by q6kExpandAMX (e; dd: each
// super-block's sixteen d) against ntok tokens' q8_K activations, r tokens
// a tile; per super-block and token tile sixteen products give the four
// digit sums, and each token's S = C0 + 4 C1 + 16 C2 + 64 C3 is scaled
// into acc as dotQ6KGo does: acc + (d_a d) S.
TEXT ·q6kAMX(SB), 0, $4096-96
	AMXKSETUP(q6ka_zero)

q6ka_sb:
	VMOVUPS (DX), Z19
	XORQ R15, R15

q6ka_tile:
	AMXKTILE
	TILEZERO_T0
	TILEZERO_T1
	TILEZERO_T2
	TILEZERO_T3
	AMXQ6CHUNK
	AMXQ6CHUNK
	AMXQ6CHUNK
	AMXQ6CHUNK
	SUBQ $16384, SI
	TILESTORED_AX_CX_T0
	TILESTORED_AX1K_CX_T1
	TILESTORED_AX2K_CX_T2
	TILESTORED_AX3K_CX_T3
	AMXKTOKS

q6ka_tok:
	VPSLLD       $2, 1024(AX)(R8*1), Z16
	VPADDD       (AX)(R8*1), Z16, Z16
	VPSLLD       $4, 2048(AX)(R8*1), Z21
	VPADDD       Z21, Z16, Z16
	VPSLLD       $6, 3072(AX)(R8*1), Z21
	VPADDD       Z21, Z16, Z16
	VCVTDQ2PS    Z16, Z16
	VBROADCASTSS (R13), Z17
	VMULPS       Z19, Z17, Z18
	VMULPS       Z18, Z16, Z16
	VADDPS       (R11), Z16, Z16
	VMOVUPS      Z16, (R11)
	AMXKTOKNEXT(q6ka_tok)

	AMXKNEXT(q6ka_tile, q6ka_sb, 16384, 64)

	TILERELEASE
	VZEROUPPER
	RET
