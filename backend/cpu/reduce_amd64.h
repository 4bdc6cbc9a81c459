// Reductions shared by the kernels' epilogues, and the prologues of the
// float tile and four-row kernels.

// TILEARGS loads a tile kernel's (w *float32, wstride int, x *float32,
// xstride, n int, out *float32): rows at DI, R9 bytes apart; tokens at SI,
// BX bytes apart; n in CX; out at DX.
#define TILEARGS \
	MOVQ w+0(FP), DI;        \
	MOVQ wstride+8(FP), R9;  \
	MOVQ x+16(FP), SI;       \
	MOVQ xstride+24(FP), BX; \
	MOVQ n+32(FP), CX;       \
	MOVQ out+40(FP), DX;     \
	SHLQ $2, R9;             \
	SHLQ $2, BX

// R4ARGS loads a four-row Q8_0 kernel's (w *byte, wstride int, x *float32,
// nblocks int, out *float32): rows at SI, BX bytes apart (R8: three rows
// on); the token at DI; blocks in CX; out at DX.
#define R4ARGS \
	MOVQ w+0(FP), SI;        \
	MOVQ wstride+8(FP), BX;  \
	MOVQ x+16(FP), DI;       \
	MOVQ nblocks+24(FP), CX; \
	MOVQ out+32(FP), DX;     \
	LEAQ (BX)(BX*2), R8

// PREFETCH4R fetches the line d bytes on in each of R4ARGS's four rows.
#define PREFETCH4R(d) \
	PREFETCHT0 d(SI);        \
	PREFETCHT0 d(SI)(BX*1);  \
	PREFETCHT0 d(SI)(BX*2);  \
	PREFETCHT0 d(SI)(R8*1)

// HSUM4R leaves the four horizontal sums of a, b, c and d (Y registers)
// in xa, a's X half, as four floats. xb is b's X half; a, b and c are
// clobbered. The pairwise order is what the bit-exact tests pin.
#define HSUM4R(a, b, c, d, xa, xb) \
	VHADDPS b, a, a; \
	VHADDPS d, c, c; \
	VHADDPS c, a, a; \
	VEXTRACTF128 $1, a, xb; \
	VADDPS xb, xa, xa

// HSUM4 stores HSUM4R's four sums to dst.
#define HSUM4(a, b, c, d, xa, xb, dst) \
	HSUM4R(a, b, c, d, xa, xb); \
	VMOVUPS xa, dst

// FOLDZ adds the upper half of the Z register z into y, its lower half;
// tmp is clobbered.
#define FOLDZ(z, y, tmp) \
	VEXTRACTF64X4 $1, z, tmp; \
	VADDPS tmp, y, y

// HSUM8 folds the eight lanes of y (low half x) into x's lane 0 in the
// order hsum8 (int8.go) adds them: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
#define HSUM8(y, x, t) \
	VEXTRACTF128 $1, y, t; \
	VADDPS       t, x, x; \
	VMOVHLPS     x, x, t; \
	VADDPS       t, x, x; \
	VMOVSHDUP    x, t; \
	VADDSS       t, x, x
