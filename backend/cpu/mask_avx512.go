//go:build noavx512

package cpu

// maskAVX512: built with -tags noavx512, the backend runs as on a CPU
// without AVX-512.
const maskAVX512 = true
