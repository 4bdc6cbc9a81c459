// Macros of the int8 kernels for IQ4_XS, Q3_K and Q2_K: int8x_amd64.s
// (one token) and int8x4_amd64.s (four tokens).

// HSUMDX folds the eight int32 lanes of y (low half x) into a GPR.
#define HSUMDX(y, x, t, r) \
	VEXTRACTI128 $1, y, t  \
	VPADDD       t, x, x   \
	VPSHUFD      $0x4e, x, t \
	VPADDD       t, x, x   \
	VPSHUFD      $0xb1, x, t \
	VPADDD       t, x, x   \
	VMOVD        x, r

// SBFLOAT adds dd*float(AX) to X0, dd = d[b] * the block's fp16 at h(SI).
#define SBFLOAT(h) \
	MOVWLZX    h(SI), R9   \
	VMOVD      R9, X6      \
	VCVTPH2PS  X6, X6      \
	VMOVSS     (DX), X12   \
	VMULSS     X6, X12, X6 \
	VCVTSI2SSL AX, X13, X13 \
	VMULSS     X13, X6, X6 \
	VADDSS     X6, X0, X0

// IQ4SCALES writes an IQ4_XS block's eight sub-block scales less 32 as
// int16 at (BX): ls = (scales_l nibble ib) | (scales_h bits 2ib, 2ib+1) << 4,
// in vector registers (Y5..Y7 scratch).
#define IQ4SCALES \
	VPBROADCASTD 4(SI), Y5        \
	VPSRLVD   ·iq4lo(SB), Y5, Y5 \
	MOVL      $15, AX             \
	VMOVD     AX, X6              \
	VPBROADCASTD X6, Y6           \
	VPAND     Y6, Y5, Y5          \
	MOVWLZX   2(SI), AX           \
	VMOVD     AX, X7              \
	VPBROADCASTD X7, Y7           \
	VPSRLVD   ·iq4hi(SB), Y7, Y7 \
	MOVL      $3, AX              \
	VMOVD     AX, X6              \
	VPBROADCASTD X6, Y6           \
	VPAND     Y6, Y7, Y7          \
	VPSLLD    $4, Y7, Y7          \
	VPOR      Y7, Y5, Y5          \
	MOVL      $32, AX             \
	VMOVD     AX, X6              \
	VPBROADCASTD X6, Y6           \
	VPSUBD    Y6, Y5, Y5          \
	VEXTRACTI128 $1, Y5, X6       \
	VPACKSSDW X6, X5, X5          \
	VMOVDQU   X5, (BX)

// IQ4SUB adds sub-block ib's scaled dot into Y8 (its scale at 2ib(BX)).
#define IQ4SUB(ib) \
	VMOVDQU     (8+16*(ib))(SI), X1 \
	VPSRLW      $4, X1, X2          \
	VINSERTI128 $1, X2, Y1, Y1      \
	VPAND       Y15, Y1, Y1         \
	VPSHUFB     Y1, Y14, Y2         \
	VMOVDQU     (32*(ib))(DI), Y3   \
	VPSIGNB     Y2, Y3, Y3          \
	VPABSB      Y2, Y2              \
	VPMADDUBSW  Y3, Y2, Y2          \
	VPBROADCASTW (2*(ib))(BX), Y4   \
	VPMADDWD    Y4, Y2, Y2          \
	VPADDD      Y2, Y8, Y8

// LOWPAIR sets Y1 to the 2-bit levels of groups 2p and 2p+1: the 32 bytes
// at qoff(SI) shifted right by shift, masked by Y15 (3 in every byte).
#define LOWPAIR(qoff, shift) \
	VMOVDQU qoff(SI), Y1   \
	VPSRLW  $(shift), Y1, Y1 \
	VPAND   Y15, Y1, Y1

// PAIRDOT adds groups 2p and 2p+1 into Y8: the levels in Y1 against the
// 32 activations at xoff(DI), each group times its int16 scale at
// soff(BX) and soff+2(BX).
#define PAIRDOT(xoff, soff) \
	VMOVDQU      xoff(DI), Y3    \
	VPMADDUBSW   Y3, Y1, Y1      \
	VPBROADCASTW soff(BX), X4    \
	VPBROADCASTW (soff+2)(BX), X5 \
	VINSERTI128  $1, X5, Y4, Y4  \
	VPMADDWD     Y4, Y1, Y1      \
	VPADDD       Y1, Y8, Y8

// Q3HIGH ORs 4 times bit hbit of the high-bit mask (Y9) into the levels in
// Y1 (Y10: 1 in every byte; not Y13, which SBFLOAT's VEX scalars clear).
#define Q3HIGH(hbit) \
	VPSRLW $(hbit), Y9, Y2 \
	VPAND  Y10, Y2, Y2     \
	VPSLLW $2, Y2, Y2      \
	VPOR   Y2, Y1, Y1

#define Q3PAIR(p) \
	LOWPAIR(32+32*((p)/4), 2*((p)%4)) \
	Q3HIGH(4*((p)/4)+(p)%4)             \
	PAIRDOT(32*(p), 4*(p))

// Q3SCALES writes a Q3_K block's sixteen group scales, less the 32 words
// at thirtytwos, as int16 at (BX): ggml's unpacking of the 12 bytes at
// 96(SI) (low nibbles from dwords 0-1, high pairs from dword 2), in vector
// registers (X15: 0x03 in every byte; X5..X7 scratch).
#define Q3SCALES(thirtytwos) \
	VMOVQ     96(SI), X5             \
	VPINSRD   $2, 104(SI), X5, X5    \
	VPSHUFD   $0x44, X5, X6          \
	VPSRLVD   ·q3lo(SB), X6, X6     \
	VPAND     ·q3m0f(SB), X6, X6    \
	VPSHUFD   $0xaa, X5, X7          \
	VPSRLVD   ·q3hi(SB), X7, X7     \
	VPAND     X15, X7, X7            \
	VPSLLD    $4, X7, X7             \
	VPOR      X7, X6, X6             \
	VPMOVZXBW X6, Y5                 \
	VPSUBW    thirtytwos, Y5, Y5     \
	VMOVDQU   Y5, (BX)

#define Q2PAIR(p) \
	LOWPAIR(16+32*((p)/4), 2*((p)%4)) \
	PAIRDOT(32*(p), 4*(p))

// The four-token kernels' steps.

// TOKDOT adds levels (Y1) . activations at xa, times the pair's scales
// (Y4), into acc.
#define TOKDOT(xa, acc) \
	VMOVDQU    xa, Y3       \
	VPMADDUBSW Y3, Y1, Y3   \
	VPMADDWD   Y4, Y3, Y3   \
	VPADDD     Y3, acc, acc

// TOKDOT4 is TOKDOT for the four tokens, their activations at off.
#define TOKDOT4(off) \
	TOKDOT(off(DI), Y8)         \
	TOKDOT(off(DI)(R11*1), Y9)  \
	TOKDOT(off(DI)(R11*2), Y10) \
	TOKDOT(off(DI)(R12*1), Y11)

// TOKIQ4 is TOKDOT for IQ4 grid values (Y2, magnitudes in Y7).
#define TOKIQ4(xa, acc) \
	VMOVDQU    xa, Y3       \
	VPSIGNB    Y2, Y3, Y3   \
	VPMADDUBSW Y3, Y7, Y3   \
	VPMADDWD   Y4, Y3, Y3   \
	VPADDD     Y3, acc, acc

#define TOKIQ44(off) \
	TOKIQ4(off(DI), Y8)         \
	TOKIQ4(off(DI)(R11*1), Y9)  \
	TOKIQ4(off(DI)(R11*2), Y10) \
	TOKIQ4(off(DI)(R12*1), Y11)

// TOKADD adds (d * s) * float(AX) to the float at o(R15), d at dp.
#define TOKADD(dp, s, o) \
	VMOVSS     dp, X12      \
	VMULSS     s, X12, X12  \
	VCVTSI2SSL AX, X13, X13 \
	VMULSS     X13, X12, X12 \
	VADDSS     o(R15), X12, X12 \
	VMOVSS     X12, o(R15)

// TOKSUB subtracts it instead.
#define TOKSUB(dp, s, o) \
	VMOVSS     dp, X12      \
	VMULSS     s, X12, X12  \
	VCVTSI2SSL AX, X13, X13 \
	VMULSS     X13, X12, X12 \
	VMOVSS     o(R15), X5   \
	VSUBSS     X12, X5, X5  \
	VMOVSS     X5, o(R15)

// PAIRSCALE sets Y4 to group 2p's scale (low lane) and 2p+1's (high).
#define PAIRSCALE(soff) \
	VPBROADCASTW soff(BX), X4     \
	VPBROADCASTW (soff+2)(BX), X7 \
	VINSERTI128  $1, X7, Y4, Y4

// HIGHBITS ORs 4 times bit hbit of the mask in m (ones: 1 in every byte)
// into the levels in Y1.
#define HIGHBITS(m, ones, hbit) \
	VPSRLW $(hbit), m, Y2 \
	VPAND  ones, Y2, Y2   \
	VPSLLW $2, Y2, Y2     \
	VPOR   Y2, Y1, Y1

// IQ4VALS sets Y2 to sub-block ib's grid values, Y7 their magnitudes, Y4
// its scale.
#define IQ4VALS(ib) \
	VMOVDQU     (8+16*(ib))(SI), X1 \
	VPSRLW      $4, X1, X2          \
	VINSERTI128 $1, X2, Y1, Y1      \
	VPAND       Y15, Y1, Y1         \
	VPSHUFB     Y1, Y14, Y2         \
	VPABSB      Y2, Y7              \
	VPBROADCASTW (2*(ib))(BX), Y4
