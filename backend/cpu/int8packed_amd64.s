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
	R16E8SETUP

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
	R16SPLIT
	R16GRID
	R16E8
	R16TOKENS(7)
	R16STEP(272)
	JNZ  mxfp4p_block
	R16OUT
