package synth

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
)

// RankOptions make a reranker of a model file (WriteReranker).
type RankOptions struct {
	// Dense adds the pooler layer (cls.weight and bias, Dim x Dim, then
	// tanh): a BERT cross-encoder's classifier.dense.
	Dense bool
	// Labels name the outputs (classifier.output_labels); nil writes
	// none (one output). Qwen3-Reranker's are yes and no.
	Labels []string
	// Template is tokenizer.chat_template.rerank ("" writes none).
	Template string
	DType    quant.DType // the head's matrices; biases are F32
	Seed     uint64
}

// WriteReranker writes the GGUF base (a model file's bytes) as a reranker,
// as llama.cpp's converter writes one: <arch>.pooling_type 4 (rank), the
// classification head's tensors cls(.weight, .bias) and cls.output
// (.weight, and .bias when Dense, as a cross-encoder's out_proj has one;
// Qwen3-Reranker's rows of its classifier have none), random, sized to
// spread the scores.
func WriteReranker(w io.Writer, base []byte, o RankOptions) error {
	f, err := gguf.Parse(base)
	if err != nil {
		return err
	}
	arch, _ := f.MetaString("general.architecture")
	dim, ok := f.MetaUint(arch + ".embedding_length")
	if !ok || dim == 0 || dim > 1<<16 {
		return fmt.Errorf("synth: %q has no usable embedding_length", arch)
	}
	d := int(dim)
	gw := gguf.NewWriterFrom(f, base)
	gw.Set(arch+".pooling_type", uint32(4))
	if o.Labels != nil {
		gw.Set(arch+".classifier.output_labels", o.Labels)
	}
	if o.Template != "" {
		gw.Set("tokenizer.chat_template.rerank", o.Template)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x72616e6b))
	std := 1 / math.Sqrt(float64(d))
	outs := max(1, len(o.Labels))
	if o.Dense {
		gw.AddTensor("cls.weight", gguf.Type(o.DType), []uint64{dim, dim}, RandomMatrix(rng, o.DType, d, d, 2*std))
		gw.AddTensor("cls.bias", gguf.Type(quant.F32), []uint64{dim}, RandomMatrix(rng, quant.F32, 1, d, 0.1))
	}
	gw.AddTensor("cls.output.weight", gguf.Type(o.DType), []uint64{dim, uint64(outs)}, RandomMatrix(rng, o.DType, outs, d, 2*std))
	if o.Dense {
		gw.AddTensor("cls.output.bias", gguf.Type(quant.F32), []uint64{uint64(outs)}, RandomMatrix(rng, quant.F32, 1, outs, 0.1))
	}
	_, err = gw.WriteTo(w)
	return err
}
