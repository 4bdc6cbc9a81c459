//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows_amd64.h"

// func q80Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// q80Rows16VNNI on a group packed by packQ80 (int8packed.go): per block
// the sixteen rows' fp16 scales, then the eight vectors R16LOAD32 would
// build, in row order and already biased. One stream, no gather and no
// transpose; rb is unused.
TEXT ·q80Packed16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16iota(SB))

q80p_block:
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	PREFETCHT0 2496(SI)
	PREFETCHT0 2560(SI)
	PREFETCHT0 2624(SI)
	PREFETCHT0 2688(SI)
	VCVTPH2PS (SI), Z20
	VMOVDQU32 32(SI), Z8
	VMOVDQU32 96(SI), Z9
	VMOVDQU32 160(SI), Z10
	VMOVDQU32 224(SI), Z11
	VMOVDQU32 288(SI), Z12
	VMOVDQU32 352(SI), Z13
	VMOVDQU32 416(SI), Z14
	VMOVDQU32 480(SI), Z15
	R16TOKENS(7)
	R16STEP(544)
	JNZ  q80p_block
	R16OUT

// func mxfp4Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// mxfp4Rows16VNNI on a group packed by packMXFP4: per block the sixteen
// rows' E8M0 bytes, then the four vectors R16LOAD16 would build.
TEXT ·mxfp4Packed16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16iota(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 ·mxfp4u8(SB), Z28
	MOVL $1, AX
	VPBROADCASTD AX, Z25
	MOVL $2, AX
	VPBROADCASTD AX, Z26
	MOVL $0x00200000, AX
	VPBROADCASTD AX, Z27

mxfp4p_block:
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	PREFETCHT0 1216(SI)
	PREFETCHT0 1280(SI)
	PREFETCHT0 1344(SI)
	VPMOVZXBD (SI), Z20
	VMOVDQU32 16(SI), Z4
	VMOVDQU32 80(SI), Z5
	VMOVDQU32 144(SI), Z6
	VMOVDQU32 208(SI), Z7
	VPSRLD $4, Z4, Z12
	VPSRLD $4, Z5, Z13
	VPSRLD $4, Z6, Z14
	VPSRLD $4, Z7, Z15
	VPANDD Z16, Z4, Z8
	VPANDD Z16, Z5, Z9
	VPANDD Z16, Z6, Z10
	VPANDD Z16, Z7, Z11
	VPANDD Z16, Z12, Z12
	VPANDD Z16, Z13, Z13
	VPANDD Z16, Z14, Z14
	VPANDD Z16, Z15, Z15
	R16GRID
	// R16SCALESE8 after its gather: 2^(e-128) from the bytes in Z20.
	VPCMPUD    $1, Z26, Z20, K3
	VPSUBD     Z25, Z20, Z23
	VPSLLD     $23, Z23, Z23
	VPSLLVD    Z20, Z27, K3, Z23
	VMOVDQA32  Z23, Z20
	R16TOKENS(7)
	R16STEP(272)
	JNZ  mxfp4p_block
	R16OUT
