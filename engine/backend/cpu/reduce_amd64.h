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
