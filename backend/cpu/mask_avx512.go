//go:build noavx512

package cpu

// maskAVX512: built with -tags noavx512, the backend runs as on a CPU
// with AVX2 alone (AMD Zen 2/3): without AVX-512, and without AVX-VNNI,
// which the avxvnni family's runs cover where the CPU has it.
const maskAVX512 = true
