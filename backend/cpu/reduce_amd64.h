// Reductions shared by the kernels' epilogues.

// HSUM4 stores the four horizontal sums of a, b, c and d (Y registers) to
// dst as four floats. xa and xb are a's and b's X halves; a, b and c are
// clobbered. The pairwise order is what the bit-exact tests pin.
#define HSUM4(a, b, c, d, xa, xb, dst) \
	VHADDPS b, a, a; \
	VHADDPS d, c, c; \
	VHADDPS c, a, a; \
	VEXTRACTF128 $1, a, xb; \
	VADDPS xb, xa, xa; \
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
