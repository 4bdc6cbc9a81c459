package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
	"github.com/batchd/batchd/sample"
)

// denseRef is a single-sequence forward pass over a dense [layer][position]
// KV array. It shares the matmul, norm and RoPE kernels with the backend
// (attention and softmax are its own, in plain Go), so that a difference
// comes from paging, batching, chunking or the attention kernels; the
// goldens and the kernel tests check the kernels themselves.
type denseRef struct {
	m    *model.Model
	k, v [][][]float32
}

func (r *denseRef) step(tok, pos int) []float32 {
	c := r.m.Config
	if r.k == nil {
		r.k = make([][][]float32, c.Layers)
		r.v = make([][][]float32, c.Layers)
	}
	row := func(w *model.Matrix, x []float32) []float32 {
		out := make([]float32, w.Rows)
		if w.Type == quant.F16 { // ggml rounds an F16 matmul's input to half
			h := make([]float32, len(x))
			for i, v := range x {
				h[i] = quant.F16ToF32(quant.F32ToF16(v))
			}
			x = h
		}
		pureGo.matmulRange(out, x, nil, 1, w, 0, w.Rows, make([]float32, scratchLen(w.Cols)))
		return out
	}
	norm := func(x, w []float32) []float32 {
		out := make([]float32, len(x))
		rmsnorm(out, x, w, c.RMSEps)
		return out
	}
	rp := newRopeParams(c, r.m.RopeFactors)
	cos, sin := make([]float32, c.RopeDim/2), make([]float32, c.RopeDim/2)
	rp.angles(pos, cos, sin)
	rot := func(v []float32, heads int) {
		for h := range heads {
			for j := range c.RopeDim / 2 {
				a, b := h*c.HeadDim+2*j, h*c.HeadDim+2*j+1
				if c.RopeNeoX {
					a, b = h*c.HeadDim+j, h*c.HeadDim+j+c.RopeDim/2
				}
				co, si := cos[j], sin[j]
				x0, x1 := v[a], v[b]
				v[a], v[b] = x0*co-x1*si, x0*si+x1*co
			}
		}
	}
	x := make([]float32, c.Dim)
	r.m.Embed.Row(tok, x)
	for l, L := range r.m.Layers {
		xb := norm(x, L.AttnNorm)
		q, k, v := row(L.Wq, xb), row(L.Wk, xb), row(L.Wv, xb)
		rot(q, c.Heads)
		rot(k, c.KVHeads)
		r.k[l] = append(r.k[l], k)
		r.v[l] = append(r.v[l], v)
		att := make([]float32, c.QDim())
		for h := range c.Heads {
			kv := h / (c.Heads / c.KVHeads) * c.HeadDim
			qh := q[h*c.HeadDim : (h+1)*c.HeadDim]
			scores := make([]float32, pos+1)
			for p := range scores {
				scores[p] = pureGo.vdot(qh, r.k[l][p][kv:kv+c.HeadDim]) * float32(1/math.Sqrt(float64(c.HeadDim)))
			}
			softmax(scores)
			for p := range scores {
				out, v := att[h*c.HeadDim:(h+1)*c.HeadDim], r.v[l][p][kv:kv+c.HeadDim]
				for i := range out {
					out[i] += scores[p] * v[i]
				}
			}
		}
		o := row(L.Wo, att)
		for i := range x {
			x[i] += o[i]
		}
		xb = norm(x, L.FFNNorm)
		g, u := row(L.W1, xb), row(L.W3, xb)
		for i := range g {
			g[i] = silu(g[i]) * u[i]
		}
		d := row(L.W2, g)
		for i := range x {
			x[i] += d[i]
		}
	}
	return row(r.m.Output, norm(x, r.m.OutNorm))
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestPagedMatchesDense runs three sequences together, prefilled in uneven
// chunks through shuffled block tables, and compares every step's logits
// with the dense reference run of each sequence alone.
func TestPagedMatchesDense(t *testing.T) {
	m := loadStories(t, "gguf")
	prompts := [][]int{
		m.Tokenizer.Encode("Once upon a time, in a land far away", true),
		m.Tokenizer.Encode("Tom", true),
		m.Tokenizer.Encode("The cat sat on the mat and looked at the bird in the tree", true),
	}
	const decode = 6
	for _, bs := range []int{1, 4, 16} {
		numBlocks := 3 * (96/bs + 1)
		b, err := New(m, backend.Options{NumBlocks: numBlocks, BlockSize: bs, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		perm := rand.New(rand.NewPCG(uint64(bs), 1)).Perm(numBlocks)
		type seqState struct {
			toks   []int // all tokens so far
			done   int   // tokens whose KV is written
			blocks []int
			ref    *denseRef
			want   []float32
		}
		seqs := make([]*seqState, len(prompts))
		for i, p := range prompts {
			seqs[i] = &seqState{toks: append([]int(nil), p...), blocks: perm[i*numBlocks/3 : (i+1)*numBlocks/3], ref: &denseRef{m: m}}
		}
		for step := 0; ; step++ {
			var batch backend.Batch
			var live []*seqState
			for i, s := range seqs {
				if len(s.toks)-len(prompts[i]) >= decode {
					continue
				}
				n := min(len(s.toks)-s.done, 1+(step+i)%5) // uneven prefill chunks
				batch.Seqs = append(batch.Seqs, backend.SeqInput{Tokens: s.toks[s.done : s.done+n], Pos: s.done,
					Blocks: s.blocks, Logits: s.done+n == len(s.toks)})
				for j := s.done; j < s.done+n; j++ {
					s.want = s.ref.step(s.toks[j], j)
				}
				s.done += n
				live = append(live, s)
			}
			if len(live) == 0 {
				break
			}
			logits, err := b.Forward(&batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range live {
				if logits[i] == nil {
					continue
				}
				// 5e-5, as in TestRopeNeoXMatchesReference (7.9e-6 here on AVX-512);
				// a paging error moves logits by whole units.
				if d := maxAbsDiff(logits[i], s.want); d > 5e-5 {
					t.Fatalf("block size %d step %d: logits differ from dense by %g", bs, step, d)
				}
				s.toks = append(s.toks, sample.Argmax(logits[i]))
			}
		}
		b.Close()
	}
}

func TestForwardRejectsBadBatches(t *testing.T) {
	m := loadStories(t, "gguf")
	b, err := New(m, backend.Options{NumBlocks: 4, BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for name, s := range map[string]backend.SeqInput{
		"empty":          {Pos: 0, Blocks: []int{0}},
		"bad token":      {Tokens: []int{512}, Blocks: []int{0}},
		"negative token": {Tokens: []int{-1}, Blocks: []int{0}},
		"short table":    {Tokens: []int{1, 2, 3, 4, 5}, Blocks: []int{0}},
		"bad block":      {Tokens: []int{1}, Blocks: []int{7}},
		"past context":   {Tokens: []int{1}, Pos: 512, Blocks: []int{0, 1, 2, 3}},
	} {
		if _, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{s}}); !errors.Is(err, backend.ErrBadBatch) {
			t.Errorf("%s: got %v, want backend.ErrBadBatch", name, err)
		}
	}
}

func TestRopeNeoXMatchesReference(t *testing.T) {
	m := loadStories(t, "llama2c")
	m.Config.RopeNeoX = true // same weights, other pairing: checks the kernel, not the model
	b, err := New(m, backend.Options{NumBlocks: 8, BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ref := &denseRef{m: m}
	toks := m.Tokenizer.Encode("Lily liked cake", true)
	var want []float32
	for i, tok := range toks {
		want = ref.step(tok, i)
	}
	logits, err := b.Forward(&backend.Batch{Seqs: []backend.SeqInput{{Tokens: toks, Blocks: []int{3, 1, 6, 0, 2}, Logits: true}}})
	if err != nil {
		t.Fatal(err)
	}
	// 5e-5: the backend's SIMD exp (softmax, SiLU) is within a few ulp of
	// the reference's math.Exp, and the difference grows through the layers.
	if d := maxAbsDiff(logits[0], want); d > 5e-5 {
		t.Fatalf("neox logits differ by %g", d)
	}
}

// softmax normalizes x in place, in float64 exp: the reference's own.
func softmax(x []float32) {
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		x[i] = e
		sum += e
	}
	for i := range x {
		x[i] /= sum
	}
}
