// Package model is batchd's model runtime: it loads Llama-family weights
// (GGUF v2/v3 with F32, F16 and Q8_0 tensors, memory-mapped; llama2.c legacy
// checkpoints with their tokenizer file), tokenizes with SentencePiece BPE as
// llama2.c and llama.cpp do, and runs the forward pass on the CPU over a
// paged KV store addressed by block ids from package kvcache.
//
// Invariants kept:
//   - a malformed or unsupported file is a typed error (ErrMalformed,
//     ErrUnsupported, ErrMissingTensor, ErrShape) wrapped in *FileError,
//     never a panic;
//   - a token's logits depend only on its sequence's tokens: batching,
//     chunking and block placement do not change them;
//   - text deltas from a Detokenizer never split a UTF-8 character.
package model
