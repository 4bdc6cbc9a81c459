// AMX instructions both AMX kernel files use, by their bytes: the Go
// assembler does not know them (VEX, map 0F38; every operand register
// below 8).
#define LDTILECFG_AX   BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE    BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
#define TILEZERO_T0    BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0
// rows at AX, CX bytes apart <- tmm0
#define TILESTORED_AX_CX_T0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x08
