package engine

import (
	"fmt"
	"github.com/batchd/batchd/engine/sched"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/sample"
)

// Draft-model speculation: a second model with the target's vocabulary
// (a lower-bit file of the same weights, a smaller sibling) proposes its
// greedy tokens, k forward passes of its own per step, batched over the
// drafting sequences, in a KV pool of its own. The target verifies them as
// it verifies n-gram drafts (verify: each row sampled as a plain step would,
// the draft kept when the pick is it), so output is the target's whatever
// the draft model says: a greedy draft is a proposal with certainty, for
// which keeping it exactly when the target's own draw is it is the
// speculative-sampling rule.

// DraftModel is the draft of SpecConfig Method "draft".
type DraftModel struct {
	Model *model.Model
	// Backend runs Model; sized with NumBlocks blocks of the target's
	// BlockSize. It must not run while the target's does (the engine calls
	// both from its loop), so it may share the target's threads.
	Backend   backend.Backend
	NumBlocks int
}

// draftCatchup bounds the tokens the draft model prefills per step (a new
// request's prompt, tokens produced while drafting paused), so that a long
// prompt delays the step by about one prefill chunk of the small model.
const draftCatchup = 512

// drafter runs the draft model: its pool holds, per request, the K/V of
// the tokens in draftSeq.toks.
type drafter struct {
	m      *model.Model
	be     backend.Backend
	pool   *kvcache.Pool
	seqs   map[uint64]*draftSeq
	batch  backend.Batch
	active []draftJob // scratch: this step's drafting sequences
	asleep bool
	// catchup: tokens prefilled per step at most (draftCatchup).
	catchup int
	// wait: steps a request sits out after the pool had no room for it,
	// so that a full pool is not refilled with catch-ups every step.
	wait map[uint64]int
}

// draftSeq is one request's place in the draft model: toks are the tokens
// whose K/V its blocks hold (the request's, then drafts that may have been
// refused; reconciled against the request's tokens before each use).
type draftSeq struct {
	toks []int
	sure int // toks[:sure] are the request's own: reconciling starts there
}

type draftJob struct {
	seq  *sched.Sequence
	ds   *draftSeq
	k    int // drafts wanted
	feed []int
	pos  int
}

func newDrafter(d *DraftModel, target *model.Model, blockSize int) (*drafter, error) {
	if d == nil || d.Model == nil || d.Backend == nil {
		return nil, fmt.Errorf("%w: speculative method draft needs a draft model and its backend", ErrInvalidArgument)
	}
	if err := SameVocabulary(target, d.Model); err != nil {
		return nil, err
	}
	if d.Model.Config.NonCausal {
		return nil, fmt.Errorf("%w: draft model %s is an encoder", ErrInvalidArgument, d.Model.Path)
	}
	// A prefix cache of its own: requests that share a system prompt
	// prefill it into the draft once.
	pool, err := kvcache.New(kvcache.Options{NumBlocks: d.NumBlocks, BlockSize: blockSize, PrefixCaching: true})
	if err != nil {
		return nil, fmt.Errorf("%w: draft model: %w", ErrInvalidArgument, err)
	}
	return &drafter{m: d.Model, be: d.Backend, pool: pool, seqs: map[uint64]*draftSeq{},
		catchup: draftCatchup, wait: map[uint64]int{}}, nil
}

// SameVocabulary checks that draft's tokens are target's, id for id, so
// that its drafts mean what they say to the target.
func SameVocabulary(target, draft *model.Model) error {
	tt, dt := target.Tokenizer, draft.Tokenizer
	if tt == nil || dt == nil {
		return fmt.Errorf("%w: draft model %s: a model without a tokenizer", ErrInvalidArgument, draft.Path)
	}
	if tt.VocabSize() != dt.VocabSize() || target.Config.Vocab != draft.Config.Vocab {
		return fmt.Errorf("%w: draft model %s has %d tokens, the target %d: it needs the target's vocabulary",
			ErrInvalidArgument, draft.Path, dt.VocabSize(), tt.VocabSize())
	}
	for id := range tt.VocabSize() {
		if tt.Piece(id) != dt.Piece(id) {
			return fmt.Errorf("%w: draft model %s: token %d is %q, the target's %q: it needs the target's vocabulary",
				ErrInvalidArgument, draft.Path, id, dt.Piece(id), tt.Piece(id))
		}
	}
	return nil
}

// proposeDraft fills seq.Draft for the sequences in want (their draft
// lengths in ks) from the draft model, and returns the forward time of its
// plain passes (one token a sequence) and their count: a pass that also
// catches a sequence up (a prompt, tokens since it last drafted) is left
// out, so that the gate weighs what drafting costs each step while it goes
// on, not the once-only catch-up.
func (e *Engine) proposeDraft(want []*sched.Sequence, ks []int) (time.Duration, int) {
	d := e.spec.drafter
	if len(want) == 0 || d.asleep {
		return 0, 0
	}
	d.plan(want, ks)
	if e.seat != nil {
		e.seat.Acquire()
		defer e.seat.Release()
	}
	var plain time.Duration
	passes := 0
	for round := 0; ; round++ {
		d.batch.Seqs = d.batch.Seqs[:0]
		single := true
		for _, j := range d.active {
			if round > 0 && round >= j.k {
				continue
			}
			single = single && len(j.feed) == 1
			d.batch.Seqs = append(d.batch.Seqs, backend.SeqInput{Tokens: j.feed, Pos: j.pos,
				Blocks: d.pool.Blocks(kvcache.SeqID(j.seq.ID)), Logits: j.k > 0, PromptLen: j.seq.PromptLen})
		}
		if len(d.batch.Seqs) == 0 {
			break
		}
		start := time.Now()
		logits, err := d.be.Forward(&d.batch)
		if single {
			plain += time.Since(start)
			passes++
		}
		if err != nil {
			e.log.Error("draft model forward pass failed: drafting stops", "err", err)
			e.spec.Method = ""
			for _, j := range d.active {
				j.seq.Draft = j.seq.Draft[:0]
			}
			break
		}
		n := 0
		for i := range d.active {
			j := &d.active[i]
			if round > 0 && round >= j.k {
				continue
			}
			j.ds.toks = append(j.ds.toks, j.feed...)
			j.pos += len(j.feed)
			if j.k > 0 {
				tok := sample.Argmax(logits[n]) // the lowest id on a tie
				j.seq.Draft = append(j.seq.Draft, tok)
				j.feed = j.seq.Draft[len(j.seq.Draft)-1:]
			}
			n++
		}
	}
	return plain, passes
}

// plan reconciles each wanted sequence's draft state with its tokens and
// fills d.active: what each feeds this step (a catch-up within the step's
// budget) and how many drafts it takes (none until it has caught up).
func (d *drafter) plan(want []*sched.Sequence, ks []int) {
	d.active = d.active[:0]
	budget := d.catchup
	for i, seq := range want {
		if d.wait[seq.ID] > 0 {
			d.wait[seq.ID]--
			continue
		}
		ds := d.seqs[seq.ID]
		if ds == nil {
			ds = &draftSeq{}
			d.seqs[seq.ID] = ds
		}
		id := kvcache.SeqID(seq.ID)
		// What the draft holds beyond the request's tokens is refused drafts.
		sure := min(ds.sure, len(ds.toks))
		have := sure + commonPrefix(ds.toks[sure:], seq.Tokens[sure:])
		if have == len(seq.Tokens) { // it must compute the last token to score the next
			have--
		}
		var cached []int
		if have == 0 && !d.pool.Has(id) {
			cached, have = d.pool.Lookup(seq.Salt, seq.Tokens[:len(seq.Tokens)-1])
			d.pool.Record(len(seq.Tokens)-1, have)
			ds.toks = append(ds.toks[:0], seq.Tokens[:have]...)
		}
		ds.toks = ds.toks[:have]
		d.pool.Shrink(id, have)
		// Confirmed tokens only, and never the block of the last one, which
		// is computed again when everything else is.
		d.pool.Commit(id, seq.Salt, seq.Tokens[:have])
		feed := seq.Tokens[have:]
		if len(feed) > budget {
			feed = feed[:budget] // catch up over several steps; no draft now
		}
		budget -= len(feed)
		k := ks[i]
		if have+len(feed) < len(seq.Tokens) {
			k = 0
		}
		if err := d.pool.Allocate(id, cached, have+len(feed)+max(k-1, 0)); err != nil {
			d.drop(seq.ID) // the draft pool is full: this one drafts later, from scratch
			d.wait[seq.ID] = noRoomWait
			continue
		}
		ds.sure = have + len(feed)
		d.active = append(d.active, draftJob{seq: seq, ds: ds, k: k, feed: feed, pos: have})
		if budget == 0 {
			break
		}
	}
}

// noRoomWait is how many drafting steps a request sits out after the
// draft pool had no room for it.
const noRoomWait = 64

// drop frees a request's draft blocks.
func (d *drafter) drop(id uint64) {
	d.pool.Free(kvcache.SeqID(id))
	delete(d.seqs, id)
}

// ended forgets a request that ended (deliver).
func (d *drafter) ended(id uint64) {
	d.drop(id)
	delete(d.wait, id)
}

// sleep releases the draft model's KV memory with the target's.
func (d *drafter) sleep(weights bool) error {
	for id := range d.seqs {
		d.drop(id)
	}
	clear(d.wait)
	sl, ok := d.be.(backend.Sleeper)
	if !ok {
		return nil
	}
	if err := sl.Release(weights); err != nil {
		return err
	}
	d.asleep = true
	return nil
}

func (d *drafter) wake() error {
	if !d.asleep {
		return nil
	}
	if err := d.be.(backend.Sleeper).Restore(); err != nil {
		return err
	}
	d.asleep = false
	return nil
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
