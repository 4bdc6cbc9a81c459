package cpu

import (
	"fmt"
	"math"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
)

// Gated DeltaNet (qwen35): a recurrent layer keeps, per sequence, the last
// ConvKernel-1 inputs of its causal convolution and one VDim x VDim matrix
// per V head, updated by the gated delta rule token by token, as ggml's
// fused gated_delta_net op runs it. The states live here, keyed by
// backend.SeqInput.Seq; the engine drops them (DropState).

// defaultMaxStates bounds the live states when Options.MaxStates is 0.
const defaultMaxStates = 256

// seqState is one sequence's recurrent state: per recurrent layer (by
// layer index; nil for attention layers) its convolution's last inputs,
// time-major ((ConvKernel-1) x ConvChannels), and its matrices, per V head
// stored transposed as ggml stores them (row j holds S[.][j]).
type seqState struct {
	pos     int // the next position the state expects
	conv    [][]float32
	ssm     [][]float32
	rolling backend.StateID // the sequence's rolling snapshot, if any
}

// Recurrent reports whether the model has recurrent layers.
func (b *Backend) Recurrent() bool { return b.c.Recurrent.On() }

// States is how many sequences' recurrent states are live.
func (b *Backend) States() int { return len(b.states) }

// DropState frees a sequence's recurrent state.
func (b *Backend) DropState(seq uint64) { delete(b.states, seq) }

// prepareStates gives every share its state before the step: a fresh one
// at position 0, else the one that ended where the share starts.
func (b *Backend) prepareStates(batch *backend.Batch) error {
	for i, s := range batch.Seqs {
		if s.Rows > 1 {
			return fmt.Errorf("%w: sequence %d: a recurrent model verifies no drafts", backend.ErrBadBatch, i)
		}
		st := b.states[s.Seq]
		if st == nil && (s.Pos == 0 || s.Restore != nil) && len(b.states) >= b.maxStates {
			return fmt.Errorf("%w: %d recurrent states live, at most %d", backend.ErrBadBatch, len(b.states), b.maxStates)
		}
		if st == nil && s.Pos > 0 && s.Restore != nil {
			var err error
			if st, err = b.restore(i, s); err != nil {
				return err
			}
			st.pos, b.states[s.Seq] = s.Pos, st
		}
		if s.Pos == 0 {
			if st == nil {
				st = b.newState(nil)
				b.states[s.Seq] = st
			} else {
				for l := range st.conv {
					clear(st.conv[l])
					clear(st.ssm[l])
				}
			}
			st.pos = 0
		}
		if st == nil || st.pos != s.Pos {
			have := -1
			if st != nil {
				have = st.pos
			}
			return fmt.Errorf("%w: sequence %d continues at position %d; its recurrent state is at %d", backend.ErrBadBatch, i, s.Pos, have)
		}
	}
	return nil
}

// advanceStates records where each share's state now stands, and keeps
// the snapshots the step took.
func (b *Backend) advanceStates(batch *backend.Batch) {
	for _, s := range batch.Seqs {
		b.states[s.Seq].pos = s.Pos + len(s.Tokens)
	}
	b.keepSnapshots()
}

// deltaScratch is the recurrent layers' step scratch.
type deltaScratch struct {
	qkv, conv, z, beta, alpha, out []float32
	starts                         []int           // each share's first token
	snaps                          [][]pendingSnap // each share's snapshots to take
}

func (d *deltaScratch) grow(r model.Recurrent, n int) {
	if len(d.z) >= n*r.Inner {
		return
	}
	d.qkv = make([]float32, n*r.ConvChannels())
	d.conv = make([]float32, n*r.ConvChannels())
	d.z = make([]float32, n*r.Inner)
	d.out = make([]float32, n*r.Inner)
	d.beta = make([]float32, n*r.VHeads)
	d.alpha = make([]float32, n*r.VHeads)
}

// deltaNet runs recurrent layer l on the n normalised rows of in and
// leaves its output (before the residual add) in b.xb.
func (b *Backend) deltaNet(l int, batch *backend.Batch, in []float32, n int) {
	r, D := b.c.Recurrent, b.m.Layers[l].SSM
	ds := &b.delta
	ds.grow(r, n)
	b.matmul(in, n, mmPart{D.QKV, ds.qkv}, mmPart{D.Gate, ds.z})
	b.matmul(in, n, mmPart{D.Beta, ds.beta}, mmPart{D.Alpha, ds.alpha})
	ds.starts = ds.starts[:0]
	t := 0
	for _, s := range batch.Seqs {
		ds.starts = append(ds.starts, t)
		t += len(s.Tokens)
	}
	b.deltaJob = deltaJob{b: b, l: l, batch: batch}
	b.pool.run(len(batch.Seqs), 1, &b.deltaJob) // convolution, per sequence
	b.deltaJob.rule = true
	b.pool.run(len(batch.Seqs)*r.VHeads, 1, &b.deltaJob) // the delta rule, per sequence and head
	b.matmul(ds.out, n, mmPart{D.Out, b.xb})
}

// deltaJob is a recurrent layer's work: the convolution of each share's
// tokens, then the delta rule of each (share, V head).
type deltaJob struct {
	b     *Backend
	l     int
	batch *backend.Batch
	rule  bool
}

func (j *deltaJob) do(_, lo, hi int) {
	for u := lo; u < hi; u++ {
		if j.rule {
			j.deltaRule(u)
		} else {
			j.convolve(u)
		}
	}
}

// convolve runs share si's tokens through the causal convolution (its
// state holds the inputs before them), then SiLU, and keeps the last
// ConvKernel-1 inputs as the new state.
func (j *deltaJob) convolve(si int) {
	b := j.b
	r, D, ds := b.c.Recurrent, b.m.Layers[j.l].SSM, &b.delta
	C, K := r.ConvChannels(), r.ConvKernel
	s := j.batch.Seqs[si]
	state := b.states[s.Seq].conv[j.l]
	t0 := ds.starts[si]
	for t := range len(s.Tokens) {
		x := ds.qkv[(t0+t)*C : (t0+t+1)*C]
		out := ds.conv[(t0+t)*C : (t0+t+1)*C]
		for ch := range C {
			w := D.Conv[ch*K : (ch+1)*K]
			var sum float32
			for k := range K - 1 {
				sum += state[k*C+ch] * w[k]
			}
			out[ch] = sum + x[ch]*w[K-1]
		}
		siluRow(b.kern.simd, out)
		copy(state, state[C:])
		copy(state[(K-2)*C:], x)
		ds.snapConv(si, t, j.l, state)
	}
}

// deltaRule runs the gated delta rule for one (share, V head) over the
// share's tokens, then the head's gated RMS norm.
func (j *deltaJob) deltaRule(u int) {
	b := j.b
	c, r, D, ds := b.c, b.c.Recurrent, b.m.Layers[j.l].SSM, &b.delta
	si, h := u/r.VHeads, u%r.VHeads
	s := j.batch.Seqs[si]
	S, C, kh := r.VDim(), r.ConvChannels(), h%r.KHeads
	M := b.states[s.Seq].ssm[j.l][h*S*S : (h+1)*S*S]
	scale := float32(1 / math.Sqrt(float64(S)))
	var qb, kb, delta [256]float32 // StateSize is at most 256 in every file seen; larger heads allocate
	q, k, dl := qb[:0], kb[:0], delta[:0]
	if S > len(qb) {
		q, k, dl = make([]float32, 0, S), make([]float32, 0, S), make([]float32, 0, S)
	}
	q, k, dl = q[:S], k[:S], dl[:S]
	t0 := ds.starts[si]
	for t := range len(s.Tokens) {
		row := ds.conv[(t0+t)*C : (t0+t+1)*C]
		l2norm(q, row[kh*S:(kh+1)*S], c.RMSEps)
		l2norm(k, row[r.KeyDim()+kh*S:r.KeyDim()+(kh+1)*S], c.RMSEps)
		v := row[2*r.KeyDim()+h*S : 2*r.KeyDim()+(h+1)*S]
		tok := (t0 + t) * r.VHeads
		g := float32(math.Exp(float64(softplus(ds.alpha[tok+h]+D.DtB[h]) * D.A[h])))
		beta := sigmoid(ds.beta[tok+h])
		o := ds.out[(t0+t)*r.Inner+h*S : (t0+t)*r.Inner+(h+1)*S]
		// S k before the decay, then decayed: g (S k) is (g S) k but for
		// rounding, and the update and the output take one pass.
		if b.kern.simd && S%8 == 0 {
			attnDotsAVX2(&k[0], &M[0], S, S, S, &dl[0])
		} else {
			for jj := range S {
				dl[jj] = dotF32(M[jj*S:(jj+1)*S], k)
			}
		}
		for jj := range S {
			dl[jj] = (v[jj] - g*dl[jj]) * beta
		}
		pf := M // the state fetched into L2 meanwhile: at the last token, the next unit's
		if t == len(s.Tokens)-1 && u+1 < len(j.batch.Seqs)*r.VHeads {
			pf = b.states[j.batch.Seqs[(u+1)/r.VHeads].Seq].ssm[j.l][(u+1)%r.VHeads*S*S:]
		}
		b.kern.deltaUpdate(M, S, k, q, g, dl, o, pf)
		ds.snapHead(si, t, j.l, h, M)
		for jj := range o {
			o[jj] *= scale
		}
		// The gated norm: RMS norm of the head's output, times SiLU(z).
		rmsNorm64(o, o, D.Norm, c.RMSEps)
		gateRow(b.kern.simd, o, ds.z[(t0+t)*r.Inner+h*S:(t0+t)*r.Inner+(h+1)*S])
	}
}

// deltaUpdate sets row_j = g*row_j + d[j]*k for each row of M, and
// o[j] = row_j . q (deltaUpdateAVX2's Go twin; the SIMD kernels fetch
// next's S*S floats into L2 meanwhile, and give the same bits as each other).
func (kn *kernels) deltaUpdate(M []float32, S int, k, q []float32, g float32, d, o, next []float32) {
	switch {
	case kn.simd && kn.f.name == "avx512" && S%16 == 0:
		deltaUpdateAVX512(&M[0], S, &k[0], &q[0], g, &d[0], &o[0], &next[0])
		return
	case kn.simd && S%8 == 0:
		deltaUpdateAVX2(&M[0], S, &k[0], &q[0], g, &d[0], &o[0], &next[0])
		return
	}
	for j := range S {
		row, dj := M[j*S:(j+1)*S], d[j]
		var sum float32
		for i, kv := range k {
			row[i] = g*row[i] + dj*kv
			sum += row[i] * q[i]
		}
		o[j] = sum
	}
}

// siluRow sets x[i] = silu(x[i]): whole eights by siluAVX2 (swigluAVX2's
// gate, within 1e-6 of silu), the rest by silu.
func siluRow(simd bool, x []float32) {
	n := 0
	if simd {
		if n = len(x) &^ 7; n > 0 {
			siluAVX2(&x[0], n, &expConsts[0][0])
		}
	}
	for i := n; i < len(x); i++ {
		x[i] = silu(x[i])
	}
}

// gateRow sets o[i] *= silu(z[i]), z its scratch: whole eights by
// swigluAVX2 into z, then copied.
func gateRow(simd bool, o, z []float32) {
	n := 0
	if simd {
		if n = len(o) &^ 7; n > 0 {
			swigluAVX2(&z[0], &o[0], n, &expConsts[0][0])
			copy(o[:n], z[:n])
		}
	}
	for i := n; i < len(o); i++ {
		o[i] *= silu(z[i])
	}
}

// l2norm is ggml's L2 norm as the graph builds it: an RMS norm with eps/n,
// scaled by 1/sqrt(n): x / sqrt(sum x^2 + eps).
func l2norm(dst, x []float32, eps float32) {
	n := float32(len(x))
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	mean := float32(sum / float64(len(x)))
	s := 1 / float32(math.Sqrt(float64(mean+eps/n)))
	inv := 1 / float32(math.Sqrt(float64(n)))
	for i, v := range x {
		dst[i] = v * s * inv
	}
}

// rmsNorm64 is ggml's RMS norm (the sum in float64) times w.
func rmsNorm64(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	s := 1 / float32(math.Sqrt(float64(float32(sum/float64(len(x)))+eps)))
	for i, v := range x {
		dst[i] = v * s * w[i]
	}
}

// softplus is ggml's: x above 20, else log(1 + e^x).
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log(1 + math.Exp(float64(x))))
}

func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// gateQ splits a gated Q projection (each head's query, then its gate)
// into b.q and b.qgate.
func (b *Backend) gateQ(n int) {
	c := b.c
	hd, qd := c.HeadDim, c.QDim()
	for t := range n {
		src := b.qg[t*2*qd : (t+1)*2*qd]
		for h := range c.Heads {
			copy(b.q[t*qd+h*hd:t*qd+(h+1)*hd], src[2*h*hd:(2*h+1)*hd])
			copy(b.qgate[t*qd+h*hd:t*qd+(h+1)*hd], src[(2*h+1)*hd:(2*h+2)*hd])
		}
	}
}

// applyGate scales the attention output by the sigmoid of its gate.
func (b *Backend) applyGate(n int) {
	for i, g := range b.qgate[:n*b.c.QDim()] {
		b.att[i] *= sigmoid(g)
	}
}
