// Package synth writes deterministic random-weight Llama GGUF files of any
// shape and element type (with a synthesized byte-fallback vocabulary or a
// real tokenizer), for tests and benchmarks that need no real weights.
// modelgen is its command line.
package synth
