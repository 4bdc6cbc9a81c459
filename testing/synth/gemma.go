package synth

import (
	"fmt"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
)

// GemmaOptions shape Arch gemma3 or gemma-embedding: Window is the
// sliding layers' window (five layers in six, llama.cpp's default
// pattern); Dense, for gemma-embedding, adds the sentence-transformers
// projections after pooling (dense_2 to Dense wide, dense_3 back).
type GemmaOptions struct {
	Window, Dense int
}

func (o Options) gemma() bool { return o.Arch == "gemma3" || o.Arch == "gemma-embedding" }

// gemmaMeta writes the family's keys: a global RoPE base of 1e6 (the
// sliding layers keep llama.cpp's default 10000), the window, and for
// the embedding model mean pooling and the dense widths.
func (o Options) gemmaMeta(gw *gguf.Writer, arch string) {
	gw.Set(arch+".rope.freq_base", float32(1e6))
	gw.Set(arch+".attention.sliding_window", uint32(o.Gemma.Window))
	if arch != "gemma-embedding" {
		return
	}
	gw.Set(arch+".pooling_type", uint32(1))
	if d := o.Gemma.Dense; d > 0 {
		gw.Set(arch+".dense_2_feat_in", uint32(o.Dim))
		gw.Set(arch+".dense_2_feat_out", uint32(d))
		gw.Set(arch+".dense_3_feat_in", uint32(d))
		gw.Set(arch+".dense_3_feat_out", uint32(o.Dim))
	}
}

// gemmaLayer writes block p's norms beyond a llama block's: per-head Q and
// K norms and the norms after attention and after the FFN, random around
// 1 so that a norm applied in the wrong place shows.
func (o Options) gemmaLayer(p string, normVec func(string, int)) {
	normVec(p+"attn_q_norm.weight", o.HeadDim)
	normVec(p+"attn_k_norm.weight", o.HeadDim)
	normVec(p+"post_attention_norm.weight", o.Dim)
	normVec(p+"post_ffw_norm.weight", o.Dim)
}

// gemmaDense writes the embedding model's projections.
func (o Options) gemmaDense(mat func(string, int, int)) {
	if d := o.Gemma.Dense; o.Arch == "gemma-embedding" && d > 0 {
		mat("dense_2.weight", d, o.Dim)
		mat("dense_3.weight", o.Dim, d)
	}
}

func (o Options) checkGemma() error {
	if o.Gemma.Window <= 0 || o.Gemma.Dense < 0 || o.Gemma.Dense%quant.Lookup(o.DType).BlockElems != 0 {
		return fmt.Errorf("synth: %s needs a window (got %d) and a dense width of whole blocks (got %d)", o.Arch, o.Gemma.Window, o.Gemma.Dense)
	}
	return nil
}
