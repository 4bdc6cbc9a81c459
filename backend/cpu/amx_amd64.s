//go:build linux && !purego

#include "textflag.h"
#include "amx_amd64.h"

// AMX instructions, which the Go assembler does not know, by their bytes
// (VEX, map 0F38; every operand register below 8).
// tmm1 <- rows at DI, BX bytes apart
#define TILELOADD_T1_DI_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x1f
// tmm2 <- rows at SI+32, CX bytes apart
#define TILELOADD_T2_SI32_CX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x54; BYTE $0x0e; BYTE $0x20
// the next block's: rows at DI+32 and SI+576
#define TILELOADD_T1_DI32_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x1f; BYTE $0x20
#define TILELOADD_T2_SI576_CX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x94; BYTE $0x0e; BYTE $0x40; BYTE $0x02; BYTE $0x00; BYTE $0x00
// rows at DX, CX bytes apart <- tmm0
#define TILESTORED_DX_CX_T0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x0a
// tmm3 <- 8 rows of the 64 bytes at AX, DX (zero) bytes apart: amxm128
#define TILELOADD_T3_AX_DX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x10
// tmm0 += tmm1 (signed bytes) . tmm3 (signed bytes)
#define TDPBSSD_T0_T1_T3 BYTE $0xc4; BYTE $0xe2; BYTE $0x63; BYTE $0x5e; BYTE $0xc1
// tmm0 += tmm1 (signed bytes) . tmm2 (unsigned bytes)
#define TDPBSUD_T0_T1_T2 BYTE $0xc4; BYTE $0xe2; BYTE $0x6a; BYTE $0x5e; BYTE $0xc1
// The second set of tiles (4: sums, 5: activations, 6: weights), for the
// odd blocks: the next block's products need not wait for tile 0's store.
#define TILELOADD_T5_DI32_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x6c; BYTE $0x1f; BYTE $0x20
#define TILELOADD_T6_SI576_CX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xb4; BYTE $0x0e; BYTE $0x40; BYTE $0x02; BYTE $0x00; BYTE $0x00
#define TILEZERO_T4 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xe0
#define TDPBSSD_T4_T5_T3 BYTE $0xc4; BYTE $0xe2; BYTE $0x63; BYTE $0x5e; BYTE $0xe5
#define TDPBSUD_T4_T5_T6 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5e; BYTE $0xe5
#define TILESTORED_DX_CX_T4 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x24; BYTE $0x0a

// AMXTOK adds token i's block sums (row i of the tile stored at buf) times
// the scales into Z(i), as R16DOTS does; past the last token it leaves
// for exit.
#define AMXTOK(buf, exit, i, acc) \
	CMPQ R15, $i \
	JEQ  exit \
	VCVTDQ2PS    (i*64)(buf), Z21 \
	VMULPS.BCST  (R13), Z20, Z22 \
	VMULPS       Z22, Z21, Z21 \
	VADDPS       Z21, acc, acc \
	ADDQ R9, R13

// AMXBLOCK is a block's float work: its sums stored at buf, its weights'
// scales at SI; the next blocks' lines are fetched meanwhile.
#define AMXBLOCK(buf, exit) \
	PREFETCHT0 1088(SI) \
	PREFETCHT0 1152(SI) \
	PREFETCHT0 1216(SI) \
	PREFETCHT0 1280(SI) \
	PREFETCHT0 1344(SI) \
	PREFETCHT0 1408(SI) \
	PREFETCHT0 1472(SI) \
	PREFETCHT0 1536(SI) \
	PREFETCHT0 1600(SI) \
	VCVTPH2PS (SI), Z20 \
	MOVQ R10, R13 \
	AMXTOK(buf, exit, 0, Z0) \
	AMXTOK(buf, exit, 1, Z1) \
	AMXTOK(buf, exit, 2, Z2) \
	AMXTOK(buf, exit, 3, Z3) \
	AMXTOK(buf, exit, 4, Z4) \
	AMXTOK(buf, exit, 5, Z5) \
	AMXTOK(buf, exit, 6, Z6) \
	AMXTOK(buf, exit, 7, Z7) \
	AMXTOK(buf, exit, 8, Z8) \
	AMXTOK(buf, exit, 9, Z9) \
	AMXTOK(buf, exit, 10, Z10) \
	AMXTOK(buf, exit, 11, Z11) \
	AMXTOK(buf, exit, 12, Z12) \
	AMXTOK(buf, exit, 13, Z13) \
	AMXTOK(buf, exit, 14, Z14) \
	AMXTOK(buf, exit, 15, Z15)

// AMXNEXT steps to the next block.
#define AMXNEXT \
	ADDQ $544, SI \
	ADDQ $32, DI \
	ADDQ $4, R10 \
	DECQ R14

// NIBQ80(v) writes packed dword v's low nibbles' values (Z28: grid) as
// dword v, its high ones' as dword 4+v.
#define NIBQ80(v) \
	VMOVDQU32 (32+64*v)(SI), Z1 \
	VPSRLD    $4, Z1, Z2 \
	VPANDD    Z16, Z1, Z1 \
	VPANDD    Z16, Z2, Z2 \
	VPSHUFB   Z1, Z28, Z1 \
	VPSHUFB   Z2, Z28, Z2 \
	VMOVDQU32 Z1, (32+64*v)(DI) \
	VMOVDQU32 Z2, (288+64*v)(DI)

#define AMXSTORE(i, acc) \
	CMPQ R15, $i \
	JEQ  amx_done \
	VMOVUPS acc, (DI) \
	ADDQ BX, DI

// func q80AMX16(cfg *byte, w *byte, qs *int8, d *float32, qstride, dstride, nb, ntok int, out *float32, ostride int)
// q80Packed16VNNI for 1 to 16 tokens on AMX: per block a tile product
// (tokens x 32 activations by 32 x 16 rows of packQ80's biased bytes) and
// one with -128s (which cancels the bias) give the integers the VNNI
// kernel sums, and the float work per token is that kernel's. cfg is the
// tile configuration for ntok tokens (amxConfigs).
TEXT ·q80AMX16(SB), 0, $2048-80
	AMXQ80ARGS
	MOVQ ntok+56(FP), R15
	MOVQ $64, CX
	LEAQ ·amxm128(SB), AX
	XORQ DX, DX
	TILELOADD_T3_AX_DX
	LEAQ 0(SP), AX
	LEAQ 1024(SP), DX
	AMXZERO16

	// Even blocks' products run on tiles 0-2 into the buffer at AX, odd
	// blocks' on tiles 4-6 into DX. Tiles are not renamed: with one set,
	// block b+1's products waited for block b's store, so every block
	// paid the whole load, product, store latency in turn. Block b+1's
	// products are issued before block b's float work, which reads the
	// buffer stored one step earlier.
	TILELOADD_T1_DI_BX
	TILELOADD_T2_SI32_CX
	TILEZERO_T0
	TDPBSSD_T0_T1_T3
	TDPBSUD_T0_T1_T2
	TILESTORED_AX_CX_T0

amx_even:
	CMPQ R14, $1
	JEQ  amx_even_sums
	TILELOADD_T5_DI32_BX
	TILELOADD_T6_SI576_CX
	TILEZERO_T4
	TDPBSSD_T4_T5_T3
	TDPBSUD_T4_T5_T6
	TILESTORED_DX_CX_T4

amx_even_sums:
	AMXBLOCK(AX, amx_even_next)

amx_even_next:
	AMXNEXT
	JZ   amx_end
	CMPQ R14, $1
	JEQ  amx_odd_sums
	TILELOADD_T1_DI32_BX
	TILELOADD_T2_SI576_CX
	TILEZERO_T0
	TDPBSSD_T0_T1_T3
	TDPBSUD_T0_T1_T2
	TILESTORED_AX_CX_T0

amx_odd_sums:
	AMXBLOCK(DX, amx_odd_next)

amx_odd_next:
	AMXNEXT
	JNZ  amx_even

amx_end:
	TILERELEASE
	MOVQ out+64(FP), DI
	MOVQ ostride+72(FP), BX
	SHLQ $2, BX
	AMXSTORE(0, Z0)
	AMXSTORE(1, Z1)
	AMXSTORE(2, Z2)
	AMXSTORE(3, Z3)
	AMXSTORE(4, Z4)
	AMXSTORE(5, Z5)
	AMXSTORE(6, Z6)
	AMXSTORE(7, Z7)
	AMXSTORE(8, Z8)
	AMXSTORE(9, Z9)
	AMXSTORE(10, Z10)
	AMXSTORE(11, Z11)
	AMXSTORE(12, Z12)
	AMXSTORE(13, Z13)
	AMXSTORE(14, Z14)
	AMXSTORE(15, Z15)

amx_done:
	VZEROUPPER
	RET

// amxm128: 64 bytes of -128, every row of tile 3. A block's product with
// them is its activations' sum times -128, which cancels packQ80's bias.
DATA ·amxm128+0(SB)/8, $0x8080808080808080
DATA ·amxm128+8(SB)/8, $0x8080808080808080
DATA ·amxm128+16(SB)/8, $0x8080808080808080
DATA ·amxm128+24(SB)/8, $0x8080808080808080
DATA ·amxm128+32(SB)/8, $0x8080808080808080
DATA ·amxm128+40(SB)/8, $0x8080808080808080
DATA ·amxm128+48(SB)/8, $0x8080808080808080
DATA ·amxm128+56(SB)/8, $0x8080808080808080
GLOBL ·amxm128(SB), RODATA|NOPTR, $64

// func nibblesToQ80AMX(src *byte, nb int, dst *byte, grid *byte)
// A group packed by packQ40 (Q4_0, IQ4_NL) to packQ80's layout: per block
// the sixteen fp16 scales as they are, then each nibble's value plus 128
// from grid (16 bytes); dword v of the block (v < 4) holds the low
// nibbles of the packed dword v, dword 4+v its high ones.
TEXT ·nibblesToQ80AMX(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVQ grid+24(FP), AX
	VBROADCASTI32X4 (AX), Z28
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16

nib_block:
	VMOVDQU (SI), Y0
	VMOVDQU Y0, (DI)
	NIBQ80(0)
	NIBQ80(1)
	NIBQ80(2)
	NIBQ80(3)
	ADDQ $288, SI
	ADDQ $544, DI
	DECQ CX
	JNZ  nib_block
	VZEROUPPER
	RET
