// Package tokenizer turns text into token ids and back: SentencePiece BPE
// as llama2.c and llama.cpp's SPM tokenizer encode it (a priority queue of
// merges, O(n log n)), vocabularies from GGUF metadata or llama2.c files,
// and a streaming Detokenizer. It knows nothing of weights.
//
// Invariants kept:
//   - Encode's tokens equal run.c's quadratic merge loop's on any text;
//   - Detokenizer deltas are always valid UTF-8 and never split a character.
package tokenizer
