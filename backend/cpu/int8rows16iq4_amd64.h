// The sixteen-row IQ4_XS kernel's frame (int8rows16iq4_amd64.s), after
// int8rows8iq4_amd64.h: two adjacent
// packed groups (the second nsb*1088 bytes on, R11), tokens three at a
// time, then one at a time; otherwise int8rows8_amd64.h's registers.
//
// scr (bytes): 0 the first group's scales as IQSCALES leaves them (dwords
// at 0, pairs at 256, d at 512, pairs times 16 at 576), 832 the second's
// (dwords 832, pairs 1088, d 1344, pairs times 16 1408), 1664 the first
// group's grid entries plus 128 (IQDEC), 3712 the second's, 5760 three
// tokens' -128 times each sub-block's activation sum (AVX-VNNI), 5856
// each token's sixteen float sums.

// PF18(off, b): prefetch a group's super-block (17 lines) at off(b).
#define PF18(off, b) \
	PF9B(off, b) \
	PF9B(off+576, b)

// T16END(da, dd, S, acc): acc + (d_a d)S as F8END, d_a at da, the rows' d
// at dd(R9).
#define T16END(da, dd, S, acc) \
	VBROADCASTSS da, Y14 \
	VMULPS       dd(R9), Y14, Y15 \
	VCVTDQ2PS    S, S \
	VMULPS       S, Y15, S \
	VADDPS       acc, S, S \
	VMOVUPS      S, acc

// R16BEGIN loads the arguments, zeroes the sums, and per super-block
// (label block) decodes both groups' scales and grid entries through the
// eight-row macros (R9 and DI moved to each's place), then points at the
// tokens: to one while fewer than three are left, else three (label
// three).
#define R16BEGIN \
	R8LOAD \
	IMUL3Q $272, R14, R11 \
	LEAQ   5856(R9), AX \
	VXORPS Y0, Y0, Y0 \
zero: \
	VMOVUPS Y0, (AX) \
	VMOVUPS Y0, 32(AX) \
	ADDQ    $64, AX \
	DECQ    R10 \
	JNZ     zero \
	XORQ    CX, CX \
block: \
	PF18(4352, DI) \
	LEAQ    (DI)(R11*1), SI \
	PF18(4352, SI) \
	IQSCALES \
	VMOVDQU ·r8nib(SB), Y15 \
	VMOVDQU iq4u<>(SB), Y13 \
	ADDQ    $832, R9 \
	IQDEC \
	ADDQ    R11, DI \
	IQSCALES \
	ADDQ    $2048, R9 \
	IQDEC \
	SUBQ    R11, DI \
	SUBQ    $2880, R9 \
	R8TOKS(5856) \
	CMPQ    R10, $3 \
	JLT     one \
three:

// R16STEP3 moves to the next three tokens and loops to three while three
// are left; R16ONE (label onetok) starts the tokens left one at a time,
// or leaves for next.
#define R16STEP3 \
	LEAQ (BX)(R8*2), BX \
	ADDQ R8, BX \
	LEAQ (DX)(R13*2), DX \
	ADDQ R13, DX \
	LEAQ (R12)(R14*2), R12 \
	ADDQ R14, R12 \
	ADDQ $192, AX \
	SUBQ $3, R10 \
	CMPQ R10, $3 \
	JGE  three

#define R16ONE \
one: \
	TESTQ R10, R10 \
	JZ    next \
onetok:

// R16STEP1 moves to the next token, looping to onetok.
#define R16STEP1 \
	ADDQ R8, BX \
	ADDQ R13, DX \
	ADDQ R14, R12 \
	ADDQ $64, AX \
	DECQ R10 \
	JNZ  onetok

// R16END (label next) moves to the next super-block, else copies the
// tokens' sums to out and returns.
#define R16END \
next: \
	R8NEXT(1088, block) \
	MOVQ out+64(FP), DI \
	MOVQ ostride+72(FP), SI \
	SHLQ $2, SI \
	LEAQ 5856(R9), AX \
	MOVQ ntok+48(FP), R10 \
write: \
	VMOVUPS (AX), Y0 \
	VMOVUPS 32(AX), Y1 \
	VMOVUPS Y0, (DI) \
	VMOVUPS Y1, 32(DI) \
	ADDQ    $64, AX \
	ADDQ    SI, DI \
	DECQ    R10 \
	JNZ     write \
	VZEROUPPER \
	RET
