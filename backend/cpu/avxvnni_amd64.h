// VPDPBUSDY(acc, w, a) is the VEX form of VPDPBUSD Y(acc) += Y(w) (u8) by
// Y(a) (s8), as bytes: the Go assembler knows only the EVEX form, which
// needs AVX512-VNNI. C4, then R-bar X-bar B-bar with map 0F38, then W0,
// vvvv = w inverted, L1, pp 66; opcode 50; ModRM 11 acc a.
#define VPDPBUSDY(acc, w, a) \
	BYTE $0xc4; BYTE $(((1-((acc)>>3))<<7) | 0x40 | ((1-((a)>>3))<<5) | 0x02); BYTE $(((15-(w))<<3) | 0x05); BYTE $0x50; BYTE $(0xc0 | (((acc)&7)<<3) | ((a)&7))
