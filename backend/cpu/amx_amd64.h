// AMX instructions both AMX kernel files use, by their bytes: the Go
// assembler does not know them (VEX, map 0F38; every operand register
// below 8).
#define LDTILECFG_AX   BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE    BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
#define TILEZERO_T0    BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0
// rows at AX, CX bytes apart <- tmm0
#define TILESTORED_AX_CX_T0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x08
#define TILEZERO_T1    BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8
#define TILEZERO_T2    BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0
#define TILEZERO_T3    BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8
// rows at 1024(AX), 2048(AX), 3072(AX), CX bytes apart <- tmm1, tmm2, tmm3
#define TILESTORED_AX1K_CX_T1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x8c; BYTE $0x08; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00
#define TILESTORED_AX2K_CX_T2 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x94; BYTE $0x08; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00
#define TILESTORED_AX3K_CX_T3 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x9c; BYTE $0x08; BYTE $0x00; BYTE $0x0c; BYTE $0x00; BYTE $0x00

// AMXZERO16 zeroes Z0-Z15, the Q8_0 kernels' accumulators of sixteen tokens.
#define AMXZERO16 \
	VPXORD Z0, Z0, Z0 \
	VMOVDQA32 Z0, Z1 \
	VMOVDQA32 Z0, Z2 \
	VMOVDQA32 Z0, Z3 \
	VMOVDQA32 Z0, Z4 \
	VMOVDQA32 Z0, Z5 \
	VMOVDQA32 Z0, Z6 \
	VMOVDQA32 Z0, Z7 \
	VMOVDQA32 Z0, Z8 \
	VMOVDQA32 Z0, Z9 \
	VMOVDQA32 Z0, Z10 \
	VMOVDQA32 Z0, Z11 \
	VMOVDQA32 Z0, Z12 \
	VMOVDQA32 Z0, Z13 \
	VMOVDQA32 Z0, Z14 \
	VMOVDQA32 Z0, Z15

// AMXQ80ARGS configures the tiles (cfg) and loads the Q8_0 kernels'
// arguments: SI weights, DI activations, R10 their scales, BX and R9 their
// strides (R9 in bytes), R14 the blocks.
#define AMXQ80ARGS \
	MOVQ cfg+0(FP), AX \
	LDTILECFG_AX \
	MOVQ w+8(FP), SI \
	MOVQ qs+16(FP), DI \
	MOVQ d+24(FP), R10 \
	MOVQ qstride+32(FP), BX \
	MOVQ dstride+40(FP), R9 \
	SHLQ $2, R9 \
	MOVQ nb+48(FP), R14
