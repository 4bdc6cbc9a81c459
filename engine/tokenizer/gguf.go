package tokenizer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/batchd/batchd/engine/model/gguf"
)

// FromGGUF builds the tokenizer a GGUF file's metadata describes (a model
// or a vocabulary-only file).
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	if kind, _ := f.MetaString("tokenizer.ggml.model"); kind != "llama" {
		return nil, fmt.Errorf("%w: tokenizer model %q (batchd supports SentencePiece \"llama\")", ErrUnsupported, kind)
	}
	pieces, ok := f.Meta["tokenizer.ggml.tokens"].([]string)
	if !ok {
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens missing or not a string array", ErrInvalid)
	}
	scores, ok := f.Meta["tokenizer.ggml.scores"].([]float32)
	if !ok {
		return nil, fmt.Errorf("%w: tokenizer.ggml.scores missing or not a float32 array", ErrInvalid)
	}
	types, _ := f.Meta["tokenizer.ggml.token_type"].([]int32)
	spaced := make([]string, len(pieces))
	for i, p := range pieces {
		spaced[i] = strings.ReplaceAll(p, "\u2581", " ")
	}
	id := func(key string, def int) int {
		if v, ok := f.MetaUint(key); ok && v < uint64(len(pieces)) {
			return int(v)
		}
		return def
	}
	return New(spaced, scores, types, id("tokenizer.ggml.bos_token_id", 1),
		id("tokenizer.ggml.eos_token_id", 2), id("tokenizer.ggml.unknown_token_id", 0))
}

// StopTokensGGUF lists the ids that end generation for a GGUF vocabulary:
// EOS, the end-of-turn token if the file names one, and BOS, which starts a
// new document (llama2.c's run.c stops on it).
func StopTokensGGUF(f *gguf.File, tok *Tokenizer) []int {
	stops := []int{}
	add := func(id int) {
		if !slices.Contains(stops, id) {
			stops = append(stops, id)
		}
	}
	if tok.EOS >= 0 {
		add(tok.EOS)
	}
	if v, ok := f.MetaUint("tokenizer.ggml.eot_token_id"); ok && v < uint64(tok.VocabSize()) {
		add(int(v))
	}
	if tok.BOS >= 0 {
		add(tok.BOS)
	}
	return stops
}
