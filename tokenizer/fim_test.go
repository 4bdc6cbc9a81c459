package tokenizer

import (
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestFIMTokens: the fill-in-the-middle tokens are found as llama.cpp
// finds them (Qwen's <|fim_prefix|>, DeepSeek Coder's <｜fim▁begin｜>),
// and a vocabulary without them has none.
func TestFIMTokens(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "vocab")
	for file, want := range map[string][3]string{
		"ggml-vocab-qwen2.gguf":          {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
		"ggml-vocab-deepseek-coder.gguf": {"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},
		"ggml-vocab-llama-spm.gguf":      {},
	} {
		tok := loadVocab(t, filepath.Join(dir, file))
		pre, suf, mid, ok := tok.FIM()
		if want[0] == "" {
			if ok {
				t.Errorf("%s: FIM tokens %d %d %d in a vocabulary without them", file, pre, suf, mid)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: no FIM tokens", file)
			continue
		}
		for i, id := range []int{pre, suf, mid} {
			if got := tok.PieceText(id); got != want[i] {
				t.Errorf("%s: FIM token %d is %q, want %q", file, i, got, want[i])
			}
		}
	}
}
