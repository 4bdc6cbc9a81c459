package tokenizer

import (
	"slices"

	"github.com/batchd/batchd/gguf"
)

// fimTokenTexts are the fill-in-the-middle prefix, suffix and middle
// tokens llama.cpp finds by text when no tokenizer.ggml.fim_*_token_id key
// names them (Qwen, OpenCoder, Granite, DeepSeek, CodeLlama, GLM-4,
// Falcon-H1), in its order (llama.cpp v0.5.0's lists).
var fimTokenTexts = [3][]string{
	{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"},
	{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"},
	{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"},
}

// fimSet finds the vocabulary's FIM prefix, suffix and middle tokens.
func fimSet(f *gguf.File, raw []string, id func(string, int) int) [3]int {
	out := [3]int{-1, -1, -1}
	for i, key := range []string{"fim_pre", "fim_suf", "fim_mid"} {
		if k := id("tokenizer.ggml."+key+"_token_id", -1); k >= 0 && k < len(raw) {
			out[i] = k
			continue
		}
		for _, text := range fimTokenTexts[i] {
			if j := slices.Index(raw, text); j >= 0 {
				out[i] = j
				break
			}
		}
	}
	return out
}

// FIM returns the fill-in-the-middle prefix, suffix and middle token ids;
// ok is false when the vocabulary lacks one of them.
func (t *Tokenizer) FIM() (pre, suf, mid int, ok bool) {
	p, s, m := t.fim[0], t.fim[1], t.fim[2]
	return p, s, m, p >= 0 && s >= 0 && m >= 0
}
