// EXP_Y0 sets Y2 = exp(Y0) for an argument already clamped to
// [-87.3, 88]: Cephes' expf, rounding to a power of two (Y1) and a degree-5
// polynomial on the remainder. C is the register holding expConsts (see
// attention.go); Y0, Y1 and Y3 are clobbered.
#define EXP_Y0(C) \
	VMULPS (C), Y0, Y1; \
	VROUNDPS $0, Y1, Y1; \
	VFNMADD231PS 32(C), Y1, Y0; \
	VFNMADD231PS 64(C), Y1, Y0; \
	VMOVUPS 96(C), Y2; \
	VFMADD213PS 128(C), Y0, Y2; \
	VFMADD213PS 160(C), Y0, Y2; \
	VFMADD213PS 192(C), Y0, Y2; \
	VFMADD213PS 224(C), Y0, Y2; \
	VFMADD213PS 256(C), Y0, Y2; \
	VMULPS Y0, Y0, Y3; \
	VFMADD213PS Y0, Y3, Y2; \
	VADDPS 288(C), Y2, Y2; \
	VCVTPS2DQ Y1, Y1; \
	VPADDD 352(C), Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VMULPS Y1, Y2, Y2
