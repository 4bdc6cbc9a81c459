// The IQ4_XS eight-row kernels' scales and values (int8rows8iq4_amd64.s,
// int8rows8iq4s_amd64.s), after int8rows8_amd64.h.
//
// scr (bytes): 0 the scales of sub-blocks 0-7 as dwords, 256 as 16-bit
// pairs, 512 d as floats, 576 the pairs times 16, 832 the super-block's
// grid entries plus 128 (IQDEC), 2880 a group of four tokens' 128s
// (IQ4NEG), 3008 each token's eight float sums.

// iq4u: the grid plus 128, in both lanes.
DATA iq4u<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4u<>+8(SB)/8, $0xf1d9c5b5a6998d81
DATA iq4u<>+16(SB)/8, $0x766a5d4f3f2d1801
DATA iq4u<>+24(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4u<>(SB), RODATA|NOPTR, $32

// iq4d: VPSHUFB mask gathering each lane's four low words (the d halves).
DATA iq4d<>+0(SB)/8, $0x0d0c090805040100
DATA iq4d<>+8(SB)/8, $0x8080808080808080
DATA iq4d<>+16(SB)/8, $0x0d0c090805040100
DATA iq4d<>+24(SB)/8, $0x8080808080808080
GLOBL iq4d<>(SB), RODATA|NOPTR, $32

// iq4m128: -128 as words.
DATA iq4m128<>+0(SB)/8, $0xff80ff80ff80ff80
DATA iq4m128<>+8(SB)/8, $0xff80ff80ff80ff80
DATA iq4m128<>+16(SB)/8, $0xff80ff80ff80ff80
DATA iq4m128<>+24(SB)/8, $0xff80ff80ff80ff80
GLOBL iq4m128<>(SB), RODATA|NOPTR, $32

DATA iq4c0f<>+0(SB)/4, $0x0f
GLOBL iq4c0f<>(SB), RODATA|NOPTR, $4
DATA iq4c30<>+0(SB)/4, $0x30
GLOBL iq4c30<>(SB), RODATA|NOPTR, $4
DATA iq4c32<>+0(SB)/4, $32
GLOBL iq4c32<>(SB), RODATA|NOPTR, $4

// IQSC(ib): sub-block ib's scale from the low nibble ib of scales_l (Y1)
// and bits 2ib, 2ib+1 of scales_h (Y0's high words), less 32, into scr as
// a dword, as a pair and as a pair of 16 times it (Y4: 0x0f, Y5: 0x30,
// Y6: 32).
#define IQSC(ib) \
	VPSRLD   $(4*(ib)), Y1, Y2 \
	VPAND    Y4, Y2, Y2 \
	VPSRLD   $(12+2*(ib)), Y0, Y3 \
	VPAND    Y5, Y3, Y3 \
	VPOR     Y3, Y2, Y2 \
	VPSUBD   Y6, Y2, Y2 \
	VMOVDQU  Y2, (32*(ib))(R9) \
	VPSLLD   $16, Y2, Y3 \
	VPBLENDW $0x55, Y2, Y3, Y3 \
	VMOVDQU  Y3, (256+32*(ib))(R9) \
	VPSLLW   $4, Y3, Y3 \
	VMOVDQU  Y3, (576+32*(ib))(R9)

// IQSCALES decodes the eight rows' scales and d of the super-block at DI
// into scr (R9). Y0-Y6 clobbered.
#define IQSCALES \
	VMOVDQU      (DI), Y0 \
	VMOVDQU      32(DI), Y1 \
	VPBROADCASTD iq4c0f<>(SB), Y4 \
	VPBROADCASTD iq4c30<>(SB), Y5 \
	VPBROADCASTD iq4c32<>(SB), Y6 \
	IQSC(0) \
	IQSC(1) \
	IQSC(2) \
	IQSC(3) \
	IQSC(4) \
	IQSC(5) \
	IQSC(6) \
	IQSC(7) \
	VPSHUFB      iq4d<>(SB), Y0, Y0 \
	VPERMQ       $0x08, Y0, Y0 \
	VCVTPH2PS    X0, Y1 \
	VMOVUPS      Y1, 512(R9)

// IQLO(off) and IQHI(off): the packed dword vector at off(DI), its low or
// high nibbles' grid entries plus 128, into Y8 (Y15: 0x0f, Y13: iq4u).
#define IQLO(off) \
	VPAND   (off)(DI), Y15, Y8 \
	VPSHUFB Y8, Y13, Y8

#define IQHI(off) \
	VMOVDQU (off)(DI), Y8 \
	VPSRLW  $4, Y8, Y8 \
	VPAND   Y15, Y8, Y8 \
	VPSHUFB Y8, Y13, Y8


// IQDEC decodes the super-block's 32 packed vectors once into scr (packed
// vector p's low nibbles' entries at 832+64p, its high ones' 32 on), for
// the groups of four tokens to load rather than decode each time: the
// decoding was a quarter of their work. Y8, Y9 clobbered.
#define IQDEC1(p) \
	VMOVDQU (64+32*(p))(DI), Y9 \
	VPAND   Y15, Y9, Y8 \
	VPSHUFB Y8, Y13, Y8 \
	VMOVDQU Y8, (832+64*(p))(R9) \
	VPSRLW  $4, Y9, Y9 \
	VPAND   Y15, Y9, Y9 \
	VPSHUFB Y9, Y13, Y9 \
	VMOVDQU Y9, (864+64*(p))(R9)

#define IQDEC4(ib) \
	IQDEC1(4*(ib)) \
	IQDEC1(4*(ib)+1) \
	IQDEC1(4*(ib)+2) \
	IQDEC1(4*(ib)+3)

#define IQDEC \
	IQDEC4(0) \
	IQDEC4(1) \
	IQDEC4(2) \
	IQDEC4(3) \
	IQDEC4(4) \
	IQDEC4(5) \
	IQDEC4(6) \
	IQDEC4(7)

// IQLD(ib, v, hi): packed vector v of sub-block ib, its low (hi 0) or high
// nibbles' entries as IQDEC left them, into Y8.
#define IQLD(ib, v, hi) VMOVDQU (832+64*(4*(ib)+(v))+32*(hi))(R9), Y8

// IQSOFF(ib, v, hi): in split activations (splitQ8AVX2), where the h of
// packed dword v's values sit (low nibbles: values 4v.., high: 16+4v..)
// in sub-block ib's 64 bytes; their l are 8 on.
#define IQSOFF(ib, v, hi) (64*(ib)+32*(hi)+16*((v)>>1)+4*((v)&1))

// T8V(V, ib): V on sub-block ib's eight value vectors.
#define T8V(V, ib) \
	V(ib, 0, 0) \
	V(ib, 0, 1) \
	V(ib, 1, 0) \
	V(ib, 1, 1) \
	V(ib, 2, 0) \
	V(ib, 2, 1) \
	V(ib, 3, 0) \
	V(ib, 3, 1)

// IQEND(S, acc): a token's super-block, the 128s off (OFFEND).
#define IQEND(S, acc) OFFEND(256, 7, 512, S, acc)

// IQBEGIN starts a kernel: its arguments, constants (Y15: 0x0f, Y13:
// iq4u), then per super-block (label block) the scales and the tokens,
// to one while fewer than four are left, else four with R11 set.
#define IQBEGIN \
	R8ARGS(zero, 3008) \
	VMOVDQU ·r8nib(SB), Y15 \
	VMOVDQU iq4u<>(SB), Y13 \
block: \
	R8PF \
	IQSCALES \
	R8TOKS(3008) \
	CMPQ R10, $4 \
	JLT  one \
	IQDEC \
four: \
	LEAQ (BX)(R8*2), R11
