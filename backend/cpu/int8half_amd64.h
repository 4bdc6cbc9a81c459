// The frame of the half kernels (q40Rows8AVX2, q80Rows8AVX2,
// q80Rows8AVXVNNI), whose
// arguments are (w *byte, half int, qs *int8, nsum *int32, d *float32,
// qstride, nb, ntok int, out *float32, ostride int): DI the block (at its
// half's scales), R9 16*half, CX the blocks left; per token group BX its
// activations (R11 two tokens on), DX its sums and R12 its scales (R13
// apart; SI and R14 two tokens on), walked through the blocks and walked
// back; AX its results, Y4-Y7 its sums, R10 the tokens left.

// HALFX is log2 of the activations' bytes a block: 5 (q8_0 values), 6
// for q80Rows8AVX2's split ones; a kernel's file may define it first.
#ifndef HALFX
#define HALFX 5
#endif

// HALFARGS loads the arguments.
#define HALFARGS \
	MOVQ half+8(FP), R9 \
	SHLQ $4, R9 \
	MOVQ qstride+40(FP), R8 \
	MOVQ nb+48(FP), R13 \
	SHLQ $2, R13 \
	MOVQ out+64(FP), AX \
	MOVQ qs+16(FP), BX \
	MOVQ nsum+24(FP), DX \
	MOVQ d+32(FP), R12 \
	MOVQ ntok+56(FP), R10

// HALF4BEGIN starts a group of four tokens at the first block.
#define HALF4BEGIN \
	MOVQ  w+0(FP), DI \
	ADDQ  R9, DI \
	MOVQ  nb+48(FP), CX \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	LEAQ  (BX)(R8*2), R11 \
	LEAQ  (DX)(R13*2), SI \
	LEAQ  (R12)(R13*2), R14

// HALF4ENDS(END) ends the block for the four tokens (END its float step:
// sums P in Y0-Y3, nsum, d, into Y4-Y7).
#define HALF4ENDS(END) \
	END(Y0, (DX), (R12), Y4) \
	END(Y1, (DX)(R13*1), (R12)(R13*1), Y5) \
	END(Y2, (SI), (R14), Y6) \
	END(Y3, (SI)(R13*1), (R14)(R13*1), Y7)

// HALF4STEP(size) moves the group to the next block (size bytes on);
// CX's flags say whether one is left.
#define HALF4STEP(size) \
	ADDQ $size, DI \
	ADDQ $(1<<HALFX), BX \
	ADDQ $(1<<HALFX), R11 \
	ADDQ $4, DX \
	ADDQ $4, SI \
	ADDQ $4, R12 \
	ADDQ $4, R14 \
	DECQ CX

// HALFBACK walks BX, DX and R12 back to the first block; CX the stride
// of results in bytes.
#define HALFBACK \
	MOVQ R13, CX \
	SHLQ $(HALFX-2), CX \
	SUBQ CX, BX \
	SUBQ R13, DX \
	SUBQ R13, R12 \
	MOVQ ostride+72(FP), CX \
	SHLQ $2, CX

// HALF4END stores the group's results and moves to the next four tokens.
#define HALF4END \
	HALFBACK \
	VMOVUPS Y4, (AX) \
	ADDQ    CX, AX \
	VMOVUPS Y5, (AX) \
	ADDQ    CX, AX \
	VMOVUPS Y6, (AX) \
	ADDQ    CX, AX \
	VMOVUPS Y7, (AX) \
	ADDQ    CX, AX \
	LEAQ    (BX)(R8*4), BX \
	LEAQ    (DX)(R13*4), DX \
	LEAQ    (R12)(R13*4), R12 \
	SUBQ    $4, R10

// HALF1BEGIN, HALF1STEP(size) and HALF1END: the same for one token.
#define HALF1BEGIN \
	MOVQ  w+0(FP), DI \
	ADDQ  R9, DI \
	MOVQ  nb+48(FP), CX \
	VPXOR Y4, Y4, Y4

#define HALF1STEP(size) \
	ADDQ $size, DI \
	ADDQ $(1<<HALFX), BX \
	ADDQ $4, DX \
	ADDQ $4, R12 \
	DECQ CX

#define HALF1END \
	HALFBACK \
	VMOVUPS Y4, (AX) \
	ADDQ    CX, AX \
	ADDQ    R8, BX \
	ADDQ    R13, DX \
	ADDQ    R13, R12 \
	DECQ    R10

// HALFEND(P, nsum, k, d, acc): a token's block: P plus nsum shifted left
// by k (the values' offset, a power of two, times their sum), as floats
// times d_w (Y13) d_a, added to acc (Y9, Y10 clobbered).
#define HALFEND(P, nsum, k, d, acc) \
	VPBROADCASTD nsum, Y9 \
	VPSLLD       $k, Y9, Y9 \
	VPADDD       Y9, P, P \
	VCVTDQ2PS    P, P \
	VBROADCASTSS d, Y10 \
	VMULPS       Y10, Y13, Y10 \
	VMULPS       Y10, P, P \
	VADDPS       P, acc, acc

// Q8END(P, nsum, d, acc): the Q8_0 kernels' HALFEND (values stored +128).
#define Q8END(P, nsum, d, acc) HALFEND(P, nsum, 7, d, acc)

// HALF4NEXT ends a group of four tokens and loops to the label four while
// four are left; HALFONE (labels one and onetok) starts the tokens left
// one at a time, or leaves for done.
#define HALF4NEXT \
	HALF4END \
	CMPQ R10, $4 \
	JGE  four

// HALFDONE(size) steps one token's block (size bytes), loops to oneblock
// and onetok, and returns (label done).
#define HALFDONE(size) \
	HALF1STEP(size) \
	JNZ oneblock \
	HALF1END \
	JNZ onetok \
done: \
	VZEROUPPER \
	RET

#define HALFONE \
one: \
	TESTQ R10, R10 \
	JZ    done \
onetok: \
	HALF1BEGIN

// The frame of the whole-group kernels (q40Rows16AVX2, q80Rows16AVX2 and
// their AVX-VNNI forms), whose arguments are (w *byte, qs *int8, nsum *int32, d *float32,
// qstride, nb, ntok int, out *float32, ostride int): per token DI the
// block, BX its activations, R14 its nsum and DX its scale, walked
// through the blocks (CX left) from SI, R9 and R12 (R13 apart); AX its
// results (R11 apart), Y4 and Y5 its sums for rows 0-7 and 8-15, R10 the
// tokens left.
#define G16ARGS \
	MOVQ qs+8(FP), BX \
	MOVQ nsum+16(FP), R9 \
	MOVQ d+24(FP), R12 \
	MOVQ qstride+32(FP), R8 \
	MOVQ nb+40(FP), R13 \
	SHLQ $2, R13 \
	MOVQ ntok+48(FP), R10 \
	MOVQ out+56(FP), AX \
	MOVQ ostride+64(FP), R11 \
	SHLQ $2, R11

// G16BEGIN starts a token at the first block.
#define G16BEGIN \
	MOVQ   w+0(FP), DI \
	MOVQ   BX, SI \
	MOVQ   R9, R14 \
	MOVQ   R12, DX \
	MOVQ   nb+40(FP), CX \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5

// G16STEP(size) moves to the next block (size bytes on); CX's flags say
// whether one is left.
#define G16STEP(size) \
	ADDQ $size, DI \
	ADDQ $32, BX \
	ADDQ $4, R14 \
	ADDQ $4, DX \
	DECQ CX

// G16END stores the token's results and moves to the next; R10's flags
// say whether one is left.
#define G16END \
	VMOVUPS Y4, (AX) \
	VMOVUPS Y5, 32(AX) \
	ADDQ    R11, AX \
	LEAQ    (SI)(R8*1), BX \
	ADDQ    R13, R9 \
	ADDQ    R13, R12 \
	DECQ    R10

// G16FLOAT is a token's block for both halves: the sums in Y0 (rows 0-7)
// and Y2 (8-15) as floats times d_w d_a (the rows' scales at DI, d_a at
// DX), added to Y4 and Y5 (Y6, Y13, Y14 clobbered): HALFEND's float step.
#define G16FLOAT \
	VCVTDQ2PS    Y0, Y0 \
	VCVTDQ2PS    Y2, Y2 \
	VCVTPH2PS    (DI), Y13 \
	VCVTPH2PS    16(DI), Y14 \
	VBROADCASTSS (DX), Y6 \
	VMULPS       Y6, Y13, Y13 \
	VMULPS       Y6, Y14, Y14 \
	VMULPS       Y13, Y0, Y0 \
	VMULPS       Y14, Y2, Y2 \
	VADDPS       Y0, Y4, Y4 \
	VADDPS       Y2, Y5, Y5

// G16OFF(k) is G16FLOAT with the values' offset 2^k taken off: the
// token's nsum (at R14) shifted by k added to both sums first.
#define G16OFF(k) \
	VPBROADCASTD (R14), Y6 \
	VPSLLD       $k, Y6, Y6 \
	VPADDD       Y6, Y0, Y0 \
	VPADDD       Y6, Y2, Y2 \
	G16FLOAT

// HALFPF9 and HALFPF5 prefetch the lines of a block 12 KiB on (Q8_0's 544
// bytes, Q4_0's 288): against 4 KiB, Q8_0's 8 sequences ran 5-7% faster
// on plain AVX2, 32 sequences 1-4%, prompts the same.
#define HALFPF5 \
	PREFETCHT0 12288(DI) \
	PREFETCHT0 12352(DI) \
	PREFETCHT0 12416(DI) \
	PREFETCHT0 12480(DI) \
	PREFETCHT0 12544(DI)

#define HALFPF9 \
	HALFPF5 \
	PREFETCHT0 12608(DI) \
	PREFETCHT0 12672(DI) \
	PREFETCHT0 12736(DI) \
	PREFETCHT0 12800(DI)

// HALF4PASS(PF, BODY, size, pf, lbl, end) is a group of four tokens'
// pass over the blocks (BODY a block's work, size bytes; labels pf, lbl
// and end), with PF's prefetches on the first pass, which streams the
// half from memory, and the last, whose lines 12 KiB on are the next
// group's: the hardware's prefetch alone left 8 and 32 sequences 9-20%
// short, and prefetching on every pass cost prompts up to 7%.
#define HALF4PASS(PF, BODY, size, pf, lbl, end) \
	CMPQ R10, ntok+56(FP) \
	JEQ  pf \
	CMPQ R10, $8 \
	JGE  lbl \
pf: \
	PF \
	BODY \
	HALF4STEP(size) \
	JNZ  pf \
	JMP  end \
lbl: \
	BODY \
	HALF4STEP(size) \
	JNZ  lbl \
end:
