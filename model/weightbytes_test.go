package model_test

import (
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/testing/synth"
)

// TestWeightBytesCountsEveryMatrix: a decode step of a dense model reads
// every matrix but the embedding table, so WeightBytes is the file less
// that table, the header and the vectors. A layer kind whose matrices it
// missed (the Gated DeltaNet projections, which it once did) shows as a
// shortfall of megabytes, far past the slack.
func TestWeightBytesCountsEveryMatrix(t *testing.T) {
	for _, o := range []synth.Options{
		{Arch: "llama", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 512, Context: 512,
			DType: quant.Q8_0, Seed: 3, Std: 0.08},
		{Arch: "qwen35", Dim: 256, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, Vocab: 512, Context: 512,
			DType: quant.Q8_0, Seed: 3, Std: 0.08, SSM: synth.SSMOptions{State: 32, Groups: 2, VHeads: 4}},
	} {
		t.Run(o.Arch, func(t *testing.T) {
			path, _ := synth.WriteFile(t, o)
			m, err := model.Load(path, model.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			rest := m.FileBytes() - int64(m.Embed.Bytes()) - int64(m.WeightBytes())
			if slack := int64(64 << 10); rest < 0 || rest > slack {
				t.Errorf("file %d bytes, embedding %d, a step reads %d: %d bytes unaccounted (want 0 to %d: header and vectors)",
					m.FileBytes(), m.Embed.Bytes(), m.WeightBytes(), rest, slack)
			}
		})
	}
}
