// Package quant owns the weight element types batchd reads: their GGUF
// (ggml) numbers and names, and for each type batchd computes with one entry
// in a table (block size, bytes per block, exact dequantization to float32).
// Adding a format is one file that registers its entry, plus its SIMD
// kernels in the backend.
//
// Invariants kept:
//   - Dequantize gives bit for bit the float32 values ggml's own
//     dequantization gives for the same bytes;
//   - a type without an entry is not Supported, and RowBytes says -1 for it.
//
// It imports nothing of batchd's.
package quant
