package engine

import (
	"github.com/batchd/batchd/engine/sched"
	"time"

	"github.com/batchd/batchd/sample"
)

// Speculative decoding: a decode share carries drafted tokens after its
// last one, the backend returns logits for each (backend.SeqInput.Rows:
// bit for bit those of a plain decode), and each row is sampled as a plain
// step would sample it (pick: the grammar's way when one holds), the draft
// kept when the pick is it, so greedy, seeded and constrained output are
// unchanged token for token; after the kept drafts comes one token of the
// sampler's own. Rejected drafts' KV slots go back at once
// (Scheduler.AcceptDrafts).

// SpecConfig turns speculative decoding on.
type SpecConfig struct {
	// Method: "ngram" drafts from the request's own prompt and output (the
	// tokens that followed the last earlier occurrence of its last n
	// tokens); "draft" runs Draft (draftmodel.go); "" is off.
	Method string
	// Draft is the draft model of Method "draft".
	Draft *DraftModel
	// Tokens drafted per step at most; default 4.
	Tokens int
	// MaxBatch: drafting stops while more sequences than this decode;
	// below it, it stops where the engine measures that verifying costs
	// more than it saves (draftCost); default 16.
	MaxBatch int
	// NgramMin and NgramMax bound the suffix looked up; default 2 and 4.
	NgramMin, NgramMax int
	// Ungated drafts whenever there is a draft, below MaxBatch, whatever
	// the measured costs (tests that must see drafts whatever the timing).
	Ungated bool
}

func (c SpecConfig) withDefaults() SpecConfig {
	if c.Tokens <= 0 {
		c.Tokens = 4
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 16
	}
	if c.NgramMin <= 0 {
		c.NgramMin = 2
	}
	if c.NgramMax < c.NgramMin {
		c.NgramMax = max(c.NgramMin, 4)
	}
	return c
}

// specState is a request's drafting record. Its draft length follows
// what was kept: doubled after a draft kept whole, one more than was kept
// otherwise, so refused drafts cost little; a draft refused whole pauses
// drafting for a while, twice as long each time.
type specState struct {
	k, pause, misses int
}

// firstDraft is a request's first draft length at most: a long first
// draft refused whole costs a verification many times a plain step's.
const firstDraft = 4

// propose drafts for the running sequences before a step is scheduled.
// n-gram drafts are made first and dropped if the gate refuses the step
// they would make (they cost next to nothing); a draft model's passes run
// only once the gate has let through what they would draft.
func (e *Engine) propose() {
	if e.spec.Method == "" {
		return
	}
	running := e.sched.RunningSeqs()
	if len(running) > e.spec.MaxBatch {
		for _, seq := range running {
			seq.Draft = seq.Draft[:0]
		}
		return
	}
	want, ks := e.spec.want[:0], e.spec.ks[:0]
	n, d, passes := 0, 0, 0
	for _, seq := range running {
		seq.Draft = seq.Draft[:0]
		rs := e.states[seq.ID]
		if rs == nil || seq.Embed || seq.Prefill || seq.Padding || seq.Computed != len(seq.Tokens)-1 {
			continue
		}
		if rs.spec.pause > 0 {
			rs.spec.pause--
			continue
		}
		if rs.spec.k == 0 {
			rs.spec.k = min(e.spec.Tokens, firstDraft)
		}
		k := min(rs.spec.k, seq.MaxTokens-seq.Generated()-1, e.m.Config.Context-len(seq.Tokens)-1)
		switch {
		case k <= 0:
			continue
		case e.spec.drafter != nil:
			want, ks = append(want, seq), append(ks, k)
			passes = max(passes, k)
		default:
			seq.Draft = ngramDraft(seq.Draft, seq.Tokens, k, e.spec.NgramMin, e.spec.NgramMax)
			k = len(seq.Draft)
		}
		if k > 0 {
			n, d = n+1, d+k
		}
	}
	if n > 0 && !e.spec.Ungated && !e.spec.cost.pays(len(running), n, d, passes) {
		for _, seq := range running {
			seq.Draft = seq.Draft[:0]
		}
		want, ks = want[:0], ks[:0]
	}
	e.spec.want, e.spec.ks = want, ks
	if e.spec.drafter != nil && len(want) > 0 {
		if t, made := e.proposeDraft(want, ks); made > 0 {
			e.spec.cost.noteDraft(len(want), t/time.Duration(made))
		}
	}
}

// ngramDraft appends to dst up to k tokens that followed the latest
// earlier occurrence of toks' last n tokens, for the longest n in
// [lo, hi] that occurs. A continuation that runs into the end goes on
// with what it drafted: a loop of period p drafts k tokens of it, not p.
func ngramDraft(dst, toks []int, k, lo, hi int) []int {
	L, base := len(toks), len(dst)
	for n := min(hi, L-1); n >= lo; n-- {
		suffix := toks[L-n:]
		for i := L - n - 1; i >= 0; i-- {
			if toks[i] != suffix[0] || !equalInts(toks[i:i+n], suffix) {
				continue
			}
			for j := i + n; j < i+n+k; j++ {
				if j < L {
					dst = append(dst, toks[j])
				} else {
					dst = append(dst, dst[base+j-L])
				}
			}
			return dst
		}
	}
	return dst
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// pick samples a row as a plain decode step would: under the request's
// grammar when it holds, else the sampler's Draw (Sampler.Verify is that
// draw, compared). A draft is kept when the pick is it, so what the request
// gets is what it would get without drafting, grammar and seed included.
func (e *Engine) pick(rs *reqState, row []float32, history []int) (int, error) {
	if rs.constrains() {
		return e.sampleConstrained(rs, row, history)
	}
	rs.sampler.Penalize(row, history)
	return checked(row, rs.sampler.Draw(row))
}

// verify samples a decode share that carried a draft: row j of rows scores
// the token after draft[j-1]. Each draft the sampler keeps is a token of
// the request's; the first it refuses is replaced by its own draw, and
// after a draft kept whole one more token is drawn. It returns the tokens
// the request received.
func (e *Engine) verify(rs *reqState, sc sched.Scheduled, rows []float32, now time.Time) int {
	seq, draft := sc.Seq, sc.Draft
	w := len(rows) / (len(draft) + 1)
	kept, got := 0, 0
	for j := 0; j <= len(draft); j++ {
		row := rows[j*w : (j+1)*w]
		if rs.req.Logprobs {
			rs.raw = append(rs.raw[:0], row...)
		}
		tok, err := e.pick(rs, row, seq.Tokens)
		if err != nil {
			e.finish(rs, FinishError, err, now)
			break
		}
		ok := j < len(draft) && tok == draft[j]
		var lp *sample.Logprob
		if rs.req.Logprobs {
			l := sample.LogProbs(rs.raw, tok, rs.req.TopLogprobs)
			lp = &l
		}
		e.onToken(rs, tok, lp, now)
		got++
		if rs.ended || !ok {
			break
		}
		kept++
	}
	e.spec.drafted += uint64(len(draft))
	e.spec.kept += uint64(kept)
	e.spec.shares++
	e.spec.cost.noteVerify(kept)
	if !rs.ended {
		e.sched.AcceptDrafts(seq, kept)
	}
	if kept == len(draft) {
		rs.spec.k = min(e.spec.Tokens, 2*len(draft))
	} else {
		rs.spec.k = kept + 1
	}
	switch {
	case kept > 0:
		rs.spec.misses = 0
	case rs.spec.misses < 4:
		rs.spec.misses++
		rs.spec.pause = 1 << rs.spec.misses
	default:
		rs.spec.pause = 16
	}
	return got
}
