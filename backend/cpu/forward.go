package cpu

import (
	"cmp"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/quant"
)

// Backend runs the model on the CPU over a paged KV store: for every layer, K and
// V of a token live at slot (block*BlockSize + pos%BlockSize).
type Backend struct {
	m *model.Model
	// c is the model's Config as the running layer sees it (model.Config.At:
	// gemma4's layers differ in shape); full is the Config itself and widest
	// its largest widths, which size the scratch.
	c, full, widest model.Config
	// kvBlock is one block's K (or V) elements in one slot: the widest
	// layer's, so that every layer's block lies at one stride.
	kvBlock   int
	blockSize int
	numBlocks int
	lay       model.KVLayout // which block slot each layer's K and V take
	kv        backend.KVTypes
	// rotK, rotV: the Walsh-Hadamard sizes that rotate Q and K, and V and
	// the attention output, before a block format stores them (0: none).
	rotK, rotV int
	k, v       []kvLayer // per layer: its block slot's store
	slotK      []kvLayer // per block slot (model.KVLayout): every block's K of that slot
	slotV      []kvLayer
	kvMem      kvArena // backs k and v
	rope       *ropeTable
	ropeSWA    *ropeTable // the sliding layers' (rope unless Config.RopeThetaSWA)
	pool       *workers
	// sharedPool: pool is another backend's (Options.ShareThreads).
	sharedPool bool
	kern       *kernels // chosen at New (Options.Kernels)

	// scratch, grown to the largest step seen
	cap               int
	x, xb, q, kk, vv  []float32
	att, hb, hb2      []float32
	scratch           [][]float32 // per pool share: dequantized weight rows
	tokSeq, tokPos    []int
	tokID             []int     // each token of the step (gemma4's per-layer embeddings)
	ple, pleH, pleRow []float32 // gemma4: per token, every layer's per-layer input; a layer's gated input; a table row
	// gemma4's experts: the dense FFN's output, the experts' and the router's inputs
	mlp, moeIn, routerIn []float32
	// flushed: x holds the whole residual stream, no FFN output pending
	// in xb (gemma4's blocks end by scaling it).
	flushed            bool
	gen, genRows       []bool // QuantDot "auto": per token, per logits row: a generated token
	logits, logitsNorm []float32
	hidden             []float32 // final hidden states of Hidden shares
	posRow             []float32 // a learned position's row (bert)
	out                [][]float32
	q8                 acts // the current matmul input, quantized (int8 path)
	mm                 matmulJob
	ffn                swigluJob
	norm               normJob
	attn               attnJob
	store              storeJob
	x16                []float32 // a matmul's input rounded to half (half.go)
	h16                []uint16
	experts            moeScratch // the mixture of experts' (moe.go)
	moeSum             moeSumJob
	// Recurrent layers (deltanet.go): each running sequence's state, and
	// the step's scratch; a gated Q's projection and gates.
	states    map[uint64]*seqState
	maxStates int
	snaps     snapshotStore
	delta     deltaScratch
	deltaJob  deltaJob
	qg, qgate []float32
}

// New allocates the KV store and starts the worker threads.
func New(m *model.Model, o backend.Options) (*Backend, error) {
	if o.BlockSize == 0 {
		o.BlockSize = 16
	}
	if o.NumBlocks <= 0 || o.BlockSize <= 0 {
		return nil, fmt.Errorf("cpu backend: %d blocks of %d tokens", o.NumBlocks, o.BlockSize)
	}
	c := m.Config
	hd := c.HeadDim // the narrowest head: quantized K and V rotate by what divides every head
	for l := range c.Shapes {
		if err := checkKV(o.KV, c.At(l).HeadDim); err != nil {
			return nil, err
		}
		hd = min(hd, c.At(l).HeadDim)
	}
	if err := checkKV(o.KV, c.HeadDim); err != nil {
		return nil, err
	}
	k, err := chooseKernels(o.Kernels)
	if err != nil {
		return nil, err
	}
	switch o.QuantDot {
	case "", "float":
	case "int8":
		k.int8 = true
	case "auto":
		// With VNNI the row kernels beat the float path at prefill too
		// (docs/bench/issue46-auto-prefill.md), so every token takes int8.
		k.int8, k.auto = true, !k.vnni
	default:
		return nil, fmt.Errorf("cpu backend: quant dot %q (want float, int8 or auto)", o.QuantDot)
	}
	if err := repack(m, k); err != nil {
		return nil, fmt.Errorf("cpu backend: repacking rows: %w", err)
	}
	positions := min(c.Context, o.NumBlocks*o.BlockSize)
	b := &Backend{m: m, c: c, full: c, widest: c.Widest(), blockSize: o.BlockSize, numBlocks: o.NumBlocks,
		lay: c.Layout(o.Windowed), kv: o.KV, kern: k, rope: newRopeTable(c.At(firstLayer(c, false)), m.RopeFactors, positions)}
	b.kvBlock = c.KVWidth() * o.BlockSize
	b.ropeSWA = b.rope
	b.rotK, b.rotV = kvRotations(o.KV, hd)
	b.states, b.maxStates = map[uint64]*seqState{}, o.MaxStates
	if b.maxStates <= 0 {
		b.maxStates = defaultMaxStates
	}
	b.snaps = newSnapshotStore(cmp.Or(o.MaxSnapshots, b.maxStates))
	if c.RopeThetaSWA != 0 { // gemma3: the sliding layers' own base, unscaled; gemma4's factors are the full layers'
		swa := c.At(firstLayer(c, true))
		swa.RopeTheta, swa.RopeScaling = c.RopeThetaSWA, model.RopeScaling{}
		factors := m.RopeFactors
		if c.Shapes != nil {
			factors = nil
		}
		b.ropeSWA = newRopeTable(swa, factors, positions)
	}
	if host, ok := o.ShareThreads.(*Backend); ok {
		b.pool, b.sharedPool = host.pool, true
	} else {
		b.pool = newWorkers(o.Threads)
	}
	b.q8.pool = b.pool
	if err := b.Restore(); err != nil {
		return nil, err
	}
	// The KV store is reserved, not committed: a block's pages fault in when
	// a step first writes it (a few pages a block and layer; the free list
	// takes blocks that hold nothing before new ones), so start time and
	// resident memory follow what the pool holds (kvcache Usage.Touched).
	return b, nil
}

// firstLayer is the first layer that slides (or does not), else 0: whose
// shape a RoPE table takes.
func firstLayer(c model.Config, sliding bool) int {
	for l := range c.Layers {
		if c.Sliding(l) == sliding {
			return l
		}
	}
	return 0
}

// Model returns the model the backend runs.
func (b *Backend) Model() *model.Model { return b.m }

// Release drops the KV store (and, with weights, the resident pages of the
// mapped weights, which fault back in on use) for an idle sleep.
func (b *Backend) Release(weights bool) error {
	b.k, b.v, b.slotK, b.slotV = nil, nil, nil, nil
	kvErr := b.kvMem.free()
	b.cap = 0
	b.x, b.xb, b.q, b.kk, b.vv, b.att, b.hb, b.hb2, b.scratch = nil, nil, nil, nil, nil, nil, nil, nil, nil
	b.logits, b.logitsNorm = nil, nil
	var err error
	if weights {
		err = b.m.DropResident()
	}
	debug.FreeOSMemory()
	return errors.Join(kvErr, err)
}

// Restore reallocates the KV store after Release; its contents are zero.
func (b *Backend) Restore() error {
	if b.k != nil {
		return nil
	}
	if err := repack(b.m, b.kern); err != nil { // a sleep with weights dropped them
		return err
	}
	// A region per block slot (model.KVLayout), K then V, each holding
	// that slot of every block: a layer's store is its slot's region, so
	// each layer's blocks lie together whichever group uses them (a block
	// is a row of every region). Recurrent layers keep no K and V (their
	// state is per sequence).
	n := b.numBlocks * b.blockElems() // one region's elements
	kSize, vSize := b.kv.K.RowBytes(n), b.kv.V.RowBytes(n)
	a, err := newKVArena(b.lay.Slots * (kSize + vSize))
	if err != nil {
		return err
	}
	b.kvMem = a
	b.slotK, b.slotV = nil, nil
	for j := range b.lay.Slots {
		off := j * (kSize + vSize)
		b.slotK = append(b.slotK, a.layer(b.kv.K, off, n, b.blockSize, b.kern))
		b.slotV = append(b.slotV, a.layer(b.kv.V, off+kSize, n, b.blockSize, b.kern))
	}
	for l := range b.c.Layers {
		if j := b.lay.Slot[l]; j >= 0 {
			b.k, b.v = append(b.k, b.slotK[j]), append(b.v, b.slotV[j])
		} else {
			b.k, b.v = append(b.k, kvLayer{}), append(b.v, kvLayer{})
		}
	}
	return nil
}

// Close stops the worker threads and drops the KV store.
func (b *Backend) Close() error {
	if !b.sharedPool {
		b.pool.close()
	}
	b.k, b.v, b.slotK, b.slotV = nil, nil, nil, nil
	return b.kvMem.free()
}

func (b *Backend) grow(n int) {
	if n <= b.cap {
		return
	}
	c := b.widest
	b.cap = n
	b.x = make([]float32, n*c.Dim)
	b.xb = make([]float32, n*max(c.Dim, c.QDim()))
	b.q = make([]float32, n*c.QDim())
	b.kk = make([]float32, n*c.KVDim())
	b.vv = make([]float32, n*c.KVDim())
	b.att = make([]float32, n*c.QDim())
	if c.GatedQ {
		b.qg, b.qgate = make([]float32, 2*n*c.QDim()), make([]float32, n*c.QDim())
	}
	b.hb = make([]float32, n*c.FFN)
	b.hb2 = make([]float32, n*c.FFN)
	if b.scratch == nil { // every matrix is Dim, QDim or FFN wide (or an expert's FFN)
		size := max(scratchLen(c.Dim), scratchLen(c.FFN), scratchLen(c.QDim()), scratchLen(c.MoE.FFN), scratchLen(c.MoE.SharedFFN))
		for range b.pool.n {
			b.scratch = append(b.scratch, make([]float32, size))
		}
	}
	b.posRow = make([]float32, c.Dim)
	if c.PerLayer > 0 {
		b.ple = make([]float32, n*c.Layers*c.PerLayer)
		b.pleH = make([]float32, n*c.PerLayer)
		b.pleRow = make([]float32, c.Layers*c.PerLayer)
	}
	b.tokSeq = make([]int, n)
	b.tokID = make([]int, n)
	b.tokPos = make([]int, n)
	b.gen = make([]bool, n)
}

func (b *Backend) check(batch *backend.Batch) (int, error) {
	total := 0
	for i, s := range batch.Seqs {
		if len(s.Tokens) == 0 {
			return 0, fmt.Errorf("%w: sequence %d has no tokens", backend.ErrBadBatch, i)
		}
		end := s.Pos + len(s.Tokens)
		if s.Pos < 0 || end > b.c.Context {
			return 0, fmt.Errorf("%w: sequence %d positions %d..%d outside the context of %d",
				backend.ErrBadBatch, i, s.Pos, end-1, b.c.Context)
		}
		if err := b.checkTables(&s, i, end); err != nil {
			return 0, err
		}
		for _, t := range s.Tokens {
			if t < 0 || t >= b.c.Vocab {
				return 0, fmt.Errorf("%w: token %d outside the vocab of %d", backend.ErrBadBatch, t, b.c.Vocab)
			}
		}
		// Bidirectional attention needs the whole text in the share, and
		// a model without a classifier has only hidden states to give.
		if s.Rows < 0 || s.Rows > len(s.Tokens) || s.Rows > 1 && !s.Logits {
			return 0, fmt.Errorf("%w: sequence %d asks logits of %d of its %d tokens", backend.ErrBadBatch, i, s.Rows, len(s.Tokens))
		}
		if b.c.NonCausal && s.Pos != 0 || b.m.Output == nil && s.Logits {
			return 0, fmt.Errorf("%w: sequence %d: this model embeds whole texts (position %d, logits %v)",
				backend.ErrBadBatch, i, s.Pos, s.Logits)
		}
		total += len(s.Tokens)
	}
	return total, nil
}

// Forward runs one step and returns, for each sequence that asked, the logits
// of its last token (nil for the others). The slices are valid until the next call.
func (b *Backend) Forward(batch *backend.Batch) ([][]float32, error) {
	n, err := b.check(batch)
	if err != nil {
		return nil, err
	}
	if b.c.Recurrent.On() {
		if err := b.prepareStates(batch); err != nil {
			return nil, err
		}
		if err := b.planSnapshots(batch); err != nil {
			return nil, err
		}
		defer b.advanceStates(batch)
	}
	b.grow(n)
	b.experts.load = backend.ExpertLoad{}
	c := b.c
	t := 0
	for si, s := range batch.Seqs {
		for j, tok := range s.Tokens {
			b.tokSeq[t], b.tokPos[t], b.tokID[t] = si, s.Pos+j, tok
			b.gen[t] = s.Pos+j >= s.PromptLen
			x := b.x[t*c.Dim : (t+1)*c.Dim]
			b.m.Embed.Row(tok, x)
			if c.EmbedScale != 0 {
				for i := range x {
					x[i] *= c.EmbedScale
				}
			}
			b.encoderEmbed(x, s.Pos+j)
			t++
		}
	}
	b.flushed = false
	if b.m.PLE != nil {
		b.perLayerInputs(n)
	}
	for l := range b.m.Layers {
		if b.full.Shapes != nil {
			b.c = b.full.At(l)
		}
		b.layer(l, batch, n)
	}
	b.c = b.full
	return b.classify(batch, n), nil
}

// layer runs one transformer block. Pre-norm (decoders): its two residual
// adds are folded into the norms that follow them, so that they run on
// the pool, and the FFN's output is left in xb, added by the next layer's
// norm or by classify. Post-norm (encoders): each add and its LayerNorm
// write the residual stream x itself, which the next part reads.
func (b *Backend) layer(l int, batch *backend.Batch, n int) {
	c, L := b.c, &b.m.Layers[l]
	in := b.x
	if !c.PostNorm {
		var pending []float32
		if l > 0 && !b.flushed {
			pending = b.xb
		}
		b.flushed = false
		b.normalize(b.x, pending, nil, L.AttnNorm, nil, b.xb, n)
		in = b.xb
	}
	switch {
	case L.SSM != nil:
		b.deltaNet(l, batch, in, n)
	case c.GatedQ:
		b.matmul(in, n, mmPart{L.Wq, b.qg}, mmPart{L.Wk, b.kk}, mmPart{L.Wv, b.vv})
		b.gateQ(n)
		b.attend(l, batch, n)
		b.applyGate(n)
		b.matmul(b.att, n, mmPart{L.Wo, b.xb})
	case L.Wv == nil: // gemma4: K and V from another layer, or V from K
		if L.Wk == nil {
			b.matmul(in, n, mmPart{L.Wq, b.q})
		} else {
			b.matmul(in, n, mmPart{L.Wq, b.q}, mmPart{L.Wk, b.kk})
		}
		b.attend(l, batch, n)
		b.matmul(b.att, n, mmPart{L.Wo, b.xb})
	default:
		b.matmul(in, n, mmPart{L.Wq, b.q}, mmPart{L.Wk, b.kk}, mmPart{L.Wv, b.vv})
		b.attend(l, batch, n)
		b.matmul(b.att, n, mmPart{L.Wo, b.xb})
	}
	if L.PostAttn != nil {
		b.normalize(b.xb, nil, nil, L.PostAttn, nil, b.xb, n)
	}
	if c.PostNorm {
		b.normalize(b.x, b.xb, L.Bo, L.AttnNorm, L.AttnNormB, b.x, n)
	} else { // the attention output's bias (gpt-oss) joins it before the residual add, as ggml adds it
		b.normalize(b.x, b.xb, L.Bo, L.FFNNorm, nil, b.xb, n)
	}
	switch {
	case L.MoEInNorm != nil:
		b.gemma4FFN(l, n)
	case L.Router != nil:
		b.moe(l, in, in, n)
	default:
		b.denseFFN(L, in, n)
	}
	if L.PostFFN != nil {
		b.normalize(b.xb, nil, nil, L.PostFFN, nil, b.xb, n)
	}
	if c.PostNorm {
		b.normalize(b.x, b.xb, L.BDown, L.FFNNorm, L.FFNNormB, b.x, n)
	}
	if L.PLEGate != nil || L.OutScale != nil {
		b.gemma4Tail(l, n)
	}
}

// attend stores the step's K and V (after Q/K hooks and RoPE) and runs
// the attention into b.att.
func (b *Backend) attend(l int, batch *backend.Batch, n int) {
	b.store = storeJob{b: b, l: l, batch: batch}
	b.pool.run(n, 4, &b.store)
	b.attention(l, batch, n)
}

// denseFFN runs block L's FFN on the n normalised rows of in and leaves
// its output in b.xb.
func (b *Backend) denseFFN(L *model.Layer, in []float32, n int) {
	c := b.c
	for s := 0; s < n; {
		e, int8 := b.nextRun(b.gen, s, n)
		x := in[s*c.Dim:]
		var q8 *acts
		if int8 {
			q8 = b.quantized(x, e-s, L.W1, L.W3)
		}
		b.ffn = swigluJob{x: x, q8: q8, n: e - s, gate: L.W1, up: L.W3, h: b.hb[s*c.FFN:], h2: b.hb2[s*c.FFN:],
			scratch: b.scratch, k: b.kern, gelu: c.FFNGELU, upB: L.BUp, x16: b.halfFor(x, e-s, L.W1, L.W3)}
		b.pool.run(c.FFN, 16, &b.ffn)
		s = e
	}
	b.matmul(b.hb, n, mmPart{L.W2, b.xb})
}

var _ backend.ExpertCounter = (*Backend)(nil)

// ExpertLoad is what the last forward pass routed through its mixtures
// of experts (zero for a dense model).
func (b *Backend) ExpertLoad() backend.ExpertLoad { return b.experts.load }

// normalize adds add (if not nil, plus its bias addB) into the token rows
// of x, then writes their norms to dst (RMSNorm, or LayerNorm with bias
// normB); dst may be add or x.
func (b *Backend) normalize(x, add, addB, norm, normB, dst []float32, n int) {
	b.norm = normJob{x: x, add: add, addB: addB, norm: norm, normB: normB, dst: dst, cols: b.c.Dim, eps: b.c.RMSEps,
		scale: b.c.ResidualScale}
	b.pool.run(n, 1, &b.norm)
}

// matmul computes out = x . W^T for every part (sharing the input x),
// split by weight rows across the pool in one hand-off per run of tokens
// of one role (one run but under QuantDot "auto").
func (b *Backend) matmul(x []float32, n int, parts ...mmPart) {
	b.matmulRoles(x, n, b.gen, parts...)
}

func (b *Backend) matmulRoles(x []float32, n int, gen []bool, parts ...mmPart) {
	cols := parts[0].w.Cols
	for s := 0; s < n; {
		e, int8 := b.nextRun(gen, s, n)
		xs := x[s*cols:]
		b.mm = matmulJob{x: xs, n: e - s, scratch: b.scratch, k: b.kern}
		for _, p := range parts {
			if p.w.Type == quant.F16 {
				b.mm.x16 = b.halfInput(xs, e-s, cols)
				break
			}
		}
		if int8 {
			b.q8.has = [actKinds]bool{}
			for _, p := range parts {
				b.q8.need(xs, e-s, p.w, b.kern.form(p.w.Type, b.q8.prompt))
			}
			b.mm.q8 = &b.q8
		}
		rows := 0
		for _, p := range parts {
			b.mm.parts[b.mm.np] = mmPart{w: p.w, out: p.out[s*p.w.Rows:]}
			b.mm.np++
			rows += p.w.Rows
		}
		b.pool.run(rows, 16, &b.mm)
		s = e
	}
}

// nextRun returns the end of the run of tokens from s that share a path,
// and whether it may take the int8 one: all n tokens, but under QuantDot
// "auto", without VNNI, where generated tokens (gen) take int8 and prompt
// tokens float but for promptInt8's formats; it marks b.q8 with the run's
// role for form.
func (b *Backend) nextRun(gen []bool, s, n int) (int, bool) {
	b.q8.prompt = false
	switch {
	case !b.kern.int8:
		return n, false
	case !b.kern.auto:
		return n, true
	}
	e := s + 1
	for e < n && gen[e] == gen[s] {
		e++
	}
	b.q8.prompt = !gen[s]
	return e, gen[s] || b.kern.simd
}

// quantized returns x's n rows quantized for the int8 path in the forms
// gate and up take (nil without the int8 path).
func (b *Backend) quantized(x []float32, n int, gate, up *model.Matrix) *acts {
	if !b.kern.int8 {
		return nil
	}
	b.q8.has = [actKinds]bool{}
	if gate != nil {
		b.q8.need(x, n, gate, b.kern.form(gate.Type, b.q8.prompt))
	}
	b.q8.need(x, n, up, b.kern.form(up.Type, b.q8.prompt))
	return &b.q8
}

// classify applies the final norm and classifier to the last token (or the
// last Rows tokens) of every sequence that wants logits.
func (b *Backend) classify(batch *backend.Batch, n int) [][]float32 {
	c := b.c
	rows, hidden := 0, 0
	for _, s := range batch.Seqs {
		switch {
		case s.Hidden:
			hidden += len(s.Tokens)
		case s.Logits:
			rows += max(1, s.Rows)
		}
	}
	if cap(b.logits) < rows*c.Vocab {
		b.logits = make([]float32, rows*c.Vocab)
		b.logitsNorm = make([]float32, rows*c.Dim)
	}
	if cap(b.hidden) < hidden*c.Dim {
		b.hidden = make([]float32, hidden*c.Dim)
	}
	b.out = b.out[:0]
	b.genRows = b.genRows[:0]
	t, r, h := 0, 0, 0
	for _, s := range batch.Seqs {
		start := t
		t += len(s.Tokens)
		if s.Hidden { // every token's final hidden state, for pooling
			out := b.hidden[h*c.Dim : (h+len(s.Tokens))*c.Dim]
			if c.PostNorm { // the last layer's LayerNorm is the output
				copy(out, b.x[start*c.Dim:t*c.Dim])
			}
			for i := start; i < t && !c.PostNorm; i++ {
				x := b.x[i*c.Dim : (i+1)*c.Dim]
				if !b.flushed {
					addResidual(x, b.xb[i*c.Dim:(i+1)*c.Dim], c.ResidualScale) // the last layer's pending residual
				}
				rmsnorm(out[(i-start)*c.Dim:(i-start+1)*c.Dim], x, b.m.OutNorm, c.RMSEps)
			}
			b.out = append(b.out, out)
			h += len(s.Tokens)
			continue
		}
		if !s.Logits {
			b.out = append(b.out, nil)
			continue
		}
		k := max(1, s.Rows)
		b.out = append(b.out, b.logits[r*c.Vocab:(r+k)*c.Vocab])
		for i := t - k; i < t; i++ {
			b.genRows = append(b.genRows, b.gen[i])
			x := b.x[i*c.Dim : (i+1)*c.Dim]
			if !b.flushed {
				addResidual(x, b.xb[i*c.Dim:(i+1)*c.Dim], c.ResidualScale) // the last layer's pending residual
			}
			rmsnorm(b.logitsNorm[r*c.Dim:(r+1)*c.Dim], x, b.m.OutNorm, c.RMSEps)
			r++
		}
	}
	if rows > 0 {
		b.matmulRoles(b.logitsNorm, rows, b.genRows, mmPart{b.m.Output, b.logits})
		if c.FinalSoftcap > 0 {
			softcap(b.logits[:rows*c.Vocab], 1, c.FinalSoftcap)
		}
		if c.LogitScale != 0 {
			inv := 1 / c.LogitScale // ggml scales by the reciprocal
			for i := range b.logits[:rows*c.Vocab] {
				b.logits[i] *= inv
			}
		}
	}
	return b.out
}
