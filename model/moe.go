package model

import (
	"errors"
	"fmt"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/quant"
)

// maxExperts bounds expert_count (llama.cpp's LLAMA_MAX_EXPERTS is 512).
const maxExperts = 512

// How an architecture sizes its experts (Arch.Experts).
const (
	moeNone     = iota // the family has no mixture: a file with experts is refused
	moeFFN             // each expert is feed_forward_length wide (Mixtral, olmoe)
	moeSplitFFN        // expert_feed_forward_length, else feed_forward_length / expert_used_count (qwen2moe, qwen3moe)
)

// moeConfig reads a mixture of experts' keys as llama.cpp v0.5.0's graph
// for the family reads them: expert_count and expert_used_count (none: a
// dense FFN), the expert and shared widths. The gating, the weights' norm
// and their scale are the family's (Arch), as the graph hard-codes them:
// these families' files' expert_weights_norm and expert_gating_func keys
// are not read by llama.cpp either.
func moeConfig(f *gguf.File, a Arch, c *Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	n, _ := f.MetaUint(key("expert_count"))
	switch {
	case n == 0 && a.MoEOnly:
		return fmt.Errorf("%w: %s without %s", ErrMalformed, c.Arch, key("expert_count"))
	case n == 0:
		return nil
	case a.Experts == moeNone:
		return fmt.Errorf("%w: %s with %d experts", ErrUnsupported, c.Arch, n)
	}
	used, _ := f.MetaUint(key("expert_used_count"))
	if n > maxExperts || used == 0 || used > n {
		return fmt.Errorf("%w: %d experts, %d used (at most %d experts, 1 to all used)", ErrMalformed, n, used, maxExperts)
	}
	m := MoE{Experts: int(n), Used: int(used), FFN: c.FFN, Norm: a.ExpertNorm, Gating: a.Gating, OAI: a.OAISwiGLU}
	if a.Experts == moeSplitFFN {
		m.FFN = c.FFN / m.Used
		if v, ok := f.MetaUint(key("expert_feed_forward_length")); ok && v > 0 && v < 1<<24 {
			m.FFN = int(v)
		}
	}
	if v, ok := f.MetaUint(key("expert_shared_feed_forward_length")); ok && v > 0 && v < 1<<24 {
		m.SharedFFN = int(v)
	} else if a.SharedExpert {
		m.SharedFFN = c.FFN
	}
	if v, ok := f.MetaUint(key("expert_group_count")); ok && v > 1 {
		return fmt.Errorf("%w: grouped expert selection (expert_group_count %d)", ErrUnsupported, v)
	}
	if m.FFN <= 0 {
		return fmt.Errorf("%w: expert feed-forward width %d", ErrMalformed, m.FFN)
	}
	c.MoE = m
	return nil
}

// experts loads a 3-D expert tensor, [cols, rows, n] in GGUF's order, as
// n matrices of rows x cols that share its mapped bytes.
func (l *ggufLoader) experts(name string, n, rows, cols int) []*Matrix {
	t, b := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Dims) != 3 || t.Dims[0] != uint64(cols) || t.Dims[1] != uint64(rows) || t.Dims[2] != uint64(n) {
		l.errs = append(l.errs, fmt.Errorf("%w: %s has dims %v, want [%d %d %d]", ErrShape, name, t.Dims, cols, rows, n))
		return nil
	}
	all, err := NewMatrix(quant.DType(t.Type), n*rows, cols, b)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s: %w", name, err))
		return nil
	}
	out := make([]*Matrix, n)
	for e := range out {
		out[e] = all.RowRange(e*rows, (e+1)*rows)
	}
	return out
}

// rows loads a 2-D tensor [w, n] (a bias per expert) as n vectors of w,
// converted to float32 (copied: they are small).
func (l *ggufLoader) rows(name string, n, w int) [][]float32 {
	t, b := l.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Dims) != 2 || t.Dims[0] != uint64(w) || t.Dims[1] != uint64(n) {
		l.errs = append(l.errs, fmt.Errorf("%w: %s has dims %v, want [%d %d]", ErrShape, name, t.Dims, w, n))
		return nil
	}
	m, err := NewMatrix(quant.DType(t.Type), n, w, b)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s: %w", name, err))
		return nil
	}
	all := make([]float32, n*w)
	out := make([][]float32, n)
	for i := range out {
		out[i] = all[i*w : (i+1)*w : (i+1)*w]
		m.Row(i, out[i])
	}
	return out
}

// moeLayer loads block i's router, experts and shared expert.
func (l *ggufLoader) moeLayer(a Arch, c Config, i int, L *Layer) {
	tn, m := a.Tensors, c.MoE
	blk := func(pattern string) string { return fmt.Sprintf(pattern, i) }
	L.Router = l.matrix(blk(tn.Router), m.Experts, c.Dim)
	L.ExpGate = l.experts(blk(tn.ExpGate), m.Experts, m.FFN, c.Dim)
	L.ExpUp = l.experts(blk(tn.ExpUp), m.Experts, m.FFN, c.Dim)
	L.ExpDown = l.experts(blk(tn.ExpDown), m.Experts, c.Dim, m.FFN)
	if a.ExpertBias {
		L.RouterB = l.vector(blk(tn.RouterB), m.Experts)
		L.ExpGateB = l.rows(blk(tn.ExpGateB), m.Experts, m.FFN)
		L.ExpUpB = l.rows(blk(tn.ExpUpB), m.Experts, m.FFN)
		L.ExpDownB = l.rows(blk(tn.ExpDownB), m.Experts, c.Dim)
	}
	if m.SharedFFN > 0 {
		L.ShGate = l.matrix(blk(tn.ShGate), m.SharedFFN, c.Dim)
		L.ShUp = l.matrix(blk(tn.ShUp), m.SharedFFN, c.Dim)
		L.ShDown = l.matrix(blk(tn.ShDown), c.Dim, m.SharedFFN)
		if a.SharedExpert { // qwen2moe's sigmoid gate; granite's shared expert has none
			L.ShGateInp = l.vector(blk(tn.ShGateInp), c.Dim)
		}
	}
}

// checkExperts checks a block's mixture against the config.
func checkExperts(p string, l Layer, c Config) error {
	m := c.MoE
	errs := []error{checkShape(p+"router", l.Router, m.Experts, c.Dim)}
	if len(l.ExpGate) != m.Experts || len(l.ExpUp) != m.Experts || len(l.ExpDown) != m.Experts {
		return errors.Join(append(errs, fmt.Errorf("%w: %sexperts: %d, %d and %d of %d", ErrShape, p,
			len(l.ExpGate), len(l.ExpUp), len(l.ExpDown), m.Experts))...)
	}
	if m.SharedFFN > 0 {
		errs = append(errs, checkShape(p+"shared gate", l.ShGate, m.SharedFFN, c.Dim),
			checkShape(p+"shared up", l.ShUp, m.SharedFFN, c.Dim), checkShape(p+"shared down", l.ShDown, c.Dim, m.SharedFFN))
		if l.ShGateInp != nil && len(l.ShGateInp) != c.Dim {
			errs = append(errs, fmt.Errorf("%w: %sshared expert gate has %d, want %d", ErrShape, p, len(l.ShGateInp), c.Dim))
		}
	}
	return errors.Join(errs...)
}
