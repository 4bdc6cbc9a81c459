// Package gguf reads and writes the GGUF file format: header, metadata,
// tensor directory, aligned data. It knows every ggml type's block layout,
// to bound each tensor's bytes, but computes nothing; it imports nothing of
// batchd's. Parse never panics on any input (FuzzParseGGUF) and allocates
// no more than the file's size.
package gguf
