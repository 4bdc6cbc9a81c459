// Package tokenizer turns text into token ids and back, as llama.cpp's
// llama_vocab does: SentencePiece BPE (llama2.c's and llama.cpp's SPM) and
// byte-level BPE with the pre-tokenizer tokenizer.ggml.pre names, both
// O(n log n); special tokens cut out of the text first; the
// end-of-generation set; vocabularies from GGUF metadata or llama2.c
// files; a streaming Detokenizer. It knows nothing of weights.
//
// Invariants kept:
//   - every models/vocab reference (llama.cpp's ids) is reproduced exactly;
//   - SPM tokens equal run.c's quadratic merge loop's on any text;
//   - Detokenizer deltas are always valid UTF-8 and never split a character.
package tokenizer
