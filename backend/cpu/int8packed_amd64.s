//go:build amd64 && !purego

#include "textflag.h"
#include "int8rows_amd64.h"

// func q80Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// q80Rows16VNNI on a group packed by packQ80 (int8packed.go): per block
// the sixteen rows' fp16 scales, then the eight vectors R16LOAD32 would
// build, in row order and already biased. One stream, no gather and no
// transpose. The prefetch runs four blocks ahead: on the Gemma-3 shape
// eight ahead or a group ahead (as the gather kernels') were 5-15% slower
// at batch 1, where Q4_0 wants a group ahead (R16PACKED16).
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

// func q40Packed16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// q40Rows16VNNI on a group packed by packQ40: per block the sixteen rows'
// fp16 scales, then the four nibble vectors; the offset is 8.
TEXT ·q40Packed16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16iota(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16

q40p_block:
	R16PACKED16
	R16TOKENS(3)
	R16STEP(288)
	JNZ  q40p_block
	R16OUT

// func iq4nlPacked16VNNI(w *byte, rb int, qs *int8, d *float32, nsum *int32, qstride, dstride, nb, ntok int, acc, out *float32, ostride int)
// As q40Packed16VNNI, each nibble looked up in IQ4_NL's grid plus 128.
TEXT ·iq4nlPacked16VNNI(SB), NOSPLIT, $8-96
	R16SETUP(·r16iota(SB))
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z16
	VBROADCASTI32X4 ·iq4nlu8(SB), Z28

iq4nlp_block:
	R16PACKED16
	R16GRID
	R16TOKENS(7)
	R16STEP(288)
	JNZ  iq4nlp_block
	R16OUT
