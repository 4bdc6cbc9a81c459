// Package model is a loaded model: its Config, its weights (Matrix, memory-
// mapped in their stored format), its tokenizer and stop tokens. Load reads
// GGUF files, whose architecture must be in the table (arch.go), and
// llama2.c checkpoints with their tokenizer file. It runs nothing: the
// backends (backend/...) compute with what it holds.
//
// Invariants kept:
//   - a malformed or unsupported file is a typed error (ErrMalformed,
//     ErrUnsupported, ErrMissingTensor, ErrShape) wrapped in *FileError,
//     never a panic, and an unsupported architecture, part or tensor type is
//     named, never loaded with wrong numerics;
//   - weights stay memory-mapped; nothing keeps a dequantized copy of a matrix.
package model
