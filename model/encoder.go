package model

import (
	"fmt"
	"strings"

	"github.com/batchd/batchd/gguf"
)

// encoder loads what an encoder has beside its blocks: the learned
// positions (bert), the token-type table (row 0 is what every token gets:
// llama.cpp feeds type 0 throughout) and the embeddings' LayerNorm. An
// encoder has no output norm and no classifier.
func (l *ggufLoader) encoder(a Arch, m *Model) {
	c, tn := m.Config, a.Tensors
	if a.PosEmbd {
		m.PosEmbd = l.matrix(tn.PosEmbd, c.Context, c.Dim)
	}
	types := 0
	if t, ok := l.f.Tensor(tn.TokenTypes); ok && len(t.Dims) == 2 && t.Dims[1] > 0 && t.Dims[1] < 1<<16 {
		types = int(t.Dims[1])
	}
	if types == 0 {
		l.errs = append(l.errs, fmt.Errorf("%w: %s (a [dim, types] table)", ErrMissingTensor, tn.TokenTypes))
	} else if tt := l.matrix(tn.TokenTypes, types, c.Dim); tt.Rows == types {
		m.TypeEmbd = make([]float32, c.Dim)
		tt.Row(0, m.TypeEmbd)
	}
	m.EmbedNorm = l.vector(tn.EmbedNorm, c.Dim)
	m.EmbedNormB = l.vector(biasOf(tn.EmbedNorm), c.Dim)
}

// biasOf is a LayerNorm's bias tensor name: its weight's, with .bias.
func biasOf(weight string) string { return strings.TrimSuffix(weight, ".weight") + ".bias" }

func hasTensor(f *gguf.File, name string) bool {
	_, ok := f.Tensor(name)
	return ok
}
