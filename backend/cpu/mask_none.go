//go:build !noavx512

package cpu

// maskAVX512: without the tag noavx512, AVX-512 runs where the CPU has it.
const maskAVX512 = false
