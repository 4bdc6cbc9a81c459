package model

import (
	"fmt"
	"strings"
)

// PoolingRank is <arch>.pooling_type 4: the model reranks (llama.h's
// LLAMA_POOLING_TYPE_RANK).
const PoolingRank = 4

// RankHead is a reranker's classification head, as llama.cpp's rank
// pooling runs it on the pooled state x: scores = Out(tanh(Dense x +
// DenseB)) + OutB, either layer absent when the file has none (then x
// passes through), a softmax over the scores when Softmax. The relevance
// score is the first.
type RankHead struct {
	Dense  *Matrix // Dim x Dim (cls.weight), or nil
	DenseB []float32
	Out    *Matrix // Outputs x Dim (cls.output.weight), or nil
	OutB   []float32
	// Labels name the outputs (<arch>.classifier.output_labels); without
	// them there is one.
	Labels []string
	// Last pools the last token's state (Qwen3-Reranker), not the first's
	// ([CLS]); Softmax turns the outputs into probabilities (its yes/no).
	Last, Softmax bool
	// Template is the file's tokenizer.chat_template.rerank: the pair's
	// text with {query} and {document} in it; "" pairs the two with the
	// vocabulary's BOS, EOS and SEP.
	Template string
}

// Outputs is how many scores the head gives.
func (h *RankHead) Outputs() int { return max(1, len(h.Labels)) }

// dense reads the projections a sentence-transformers embedding model's
// converter may add after pooling (dense_2: Dim to its width, dense_3:
// back to Dim, as llama.cpp's build_dense_out runs them), or nil.
func (l *ggufLoader) dense(c Config) []*Matrix {
	if !hasTensor(l.f, "dense_2.weight") && !hasTensor(l.f, "dense_3.weight") {
		return nil
	}
	t2, ok2 := l.f.Tensor("dense_2.weight")
	t3, ok3 := l.f.Tensor("dense_3.weight")
	if !ok2 || !ok3 || len(t2.Dims) != 2 || len(t3.Dims) != 2 || t2.Dims[1] != t3.Dims[0] || t2.Dims[1] > 1<<20 {
		l.errs = append(l.errs, fmt.Errorf("%w: dense_2 and dense_3 do not chain (want both, Dim to a width and back)", ErrShape))
		return nil
	}
	w := int(t2.Dims[1])
	return []*Matrix{l.matrix("dense_2.weight", w, c.Dim), l.matrix("dense_3.weight", c.Dim, w)}
}

// rankHead reads a reranker's head; an architecture llama.cpp gives no
// head refuses rank pooling rather than rank with a bare state.
func (l *ggufLoader) rankHead(a Arch, c Config) (*RankHead, error) {
	if !a.Rank {
		return nil, fmt.Errorf("%w: %s with rank pooling (a reranker): batchd reranks with bert and qwen3 models", ErrUnsupported, a.Name)
	}
	h := &RankHead{Last: a.RankLast, Softmax: a.RankLast}
	if labels, ok := l.f.Meta[c.Arch+".classifier.output_labels"].([]string); ok {
		if len(labels) > 1<<10 {
			return nil, fmt.Errorf("%w: %d classifier labels", ErrShape, len(labels))
		}
		h.Labels = make([]string, len(labels))
		for i, s := range labels {
			h.Labels[i] = strings.Clone(s)
		}
	}
	if hasTensor(l.f, "cls.weight") {
		h.Dense = l.matrix("cls.weight", c.Dim, c.Dim)
		if hasTensor(l.f, "cls.bias") {
			h.DenseB = l.vector("cls.bias", c.Dim)
		}
	}
	if hasTensor(l.f, "cls.output.weight") {
		h.Out = l.matrix("cls.output.weight", h.Outputs(), c.Dim)
		if hasTensor(l.f, "cls.output.bias") {
			h.OutB = l.vector("cls.output.bias", h.Outputs())
		}
	}
	if t, ok := l.f.MetaString("tokenizer.chat_template.rerank"); ok {
		h.Template = strings.Clone(t)
	}
	return h, nil
}
