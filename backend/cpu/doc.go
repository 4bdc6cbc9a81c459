// Package cpu is the CPU backend: the forward pass over the paged KV store
// (attention reads each sequence's blocks through its table), the matmul
// jobs on a pool of spinning workers, SIMD kernels in assembly (AVX2 and
// AVX-512 float families, Q8_0 dequantization, attention, softmax, SwiGLU)
// with pure-Go twins, the KV arena, and the machine probes (bandwidth, FMA
// peak). The kernel set is chosen per Backend (Options.Kernels).
//
// Invariants kept (backendtest checks them): a token's logits do not depend
// on its batch, chunking or block placement, bit for bit; a step allocates
// nothing once its buffers have grown.
package cpu
