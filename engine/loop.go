package engine

import (
	"context"
	"fmt"
	"github.com/batchd/batchd/engine/sched"
	"runtime/debug"
	"slices"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/sample"
)

// idleTick bounds how long the idle loop sleeps, so the heartbeat keeps moving.
const idleTick = time.Second

// Run is the step loop. It returns when ctx is done, after ending every live
// request with a "cancelled" terminal event that carries ErrClosed.
func (e *Engine) Run(ctx context.Context) error {
	defer close(e.done)
	batch := &backend.Batch{}
	for !e.iterate(ctx, batch) {
	}
	return nil
}

// iterate is one pass of the loop: take new work, schedule a step, run it.
// It reports whether the loop is over. A panic that escapes a request's own
// handling (seqOutput, forward) means the loop's state can no longer be
// trusted for the requests it held: they fail, the panic is logged, and
// the loop goes on for new ones.
func (e *Engine) iterate(ctx context.Context, batch *backend.Batch) (stop bool) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("engine step panicked: failing the requests it held", "panic", r, "stack", string(debug.Stack()))
			e.failAll(fmt.Errorf("%w: %v", ErrInternal, r))
		}
	}()
	if e.afterStep != nil {
		e.afterStep()
	}
	now := e.now()
	e.heartbeat.Store(now.UnixNano())
	if ctx.Err() != nil {
		e.shutdown()
		return true
	}
	e.takeInbox(now)
	e.wakeForWork()
	e.applyPins()
	e.control(now)
	e.propose()
	step := e.sched.Schedule(now, sched.Limits{StepCap: e.contendedCap(),
		EmbedTokens: int(e.prefillRate * embedStep.Seconds())}) // 0 until a rate is known
	e.notePreempted(step)
	e.dropStates()
	for _, q := range step.Expired {
		e.finish(e.states[q.ID], FinishError, ErrDeadlineExceeded, now)
	}
	for _, q := range step.Released { // a request-level batch ended
		if rs := e.states[q.ID]; rs != nil && rs.done != nil {
			d := *rs.done
			d.Timings.Total = now.Sub(q.Arrival)
			e.deliver(rs, d, now)
		}
	}
	if len(step.Seqs) == 0 {
		e.maybeSleep()
		e.publish()
		e.idle(ctx)
		return false
	}
	if err := e.wakeUp(); err != nil {
		e.log.Error("wake from sleep failed", "err", err)
		for _, sc := range step.Seqs {
			e.finish(e.states[sc.Seq.ID], FinishError, fmt.Errorf("%w: wake: %w", ErrInternal, err), now)
		}
		return false
	}
	if e.byRole {
		promptFirst(step.Seqs)
	}
	e.fillBatch(batch, step)
	if e.seat != nil {
		e.seat.Acquire()
	}
	fwdStart := e.now()
	logits, err := e.forward(batch)
	if e.seat != nil {
		e.seat.Release()
	}
	now = e.now()
	fwd := now.Sub(fwdStart)
	e.ctl.busy += fwd
	e.notePrefillRate(step.Tokens, fwd)
	if err != nil {
		e.log.Error("forward pass failed", "err", err, "seqs", len(step.Seqs), "tokens", step.Tokens)
		for _, sc := range step.Seqs {
			e.finish(e.states[sc.Seq.ID], FinishError, fmt.Errorf("%w: forward pass: %w", ErrInternal, err), now)
		}
		return false
	}
	e.afterForward(step, logits, now, fwd)
	return false
}

// fillBatch makes the backend's input of a step.
func (e *Engine) fillBatch(batch *backend.Batch, step *sched.Step) {
	batch.Seqs = batch.Seqs[:0]
	for _, sc := range step.Seqs {
		toks := sc.Seq.Tokens[sc.Start : sc.Start+sc.N]
		if len(sc.Draft) > 0 { // a copy: Tokens' own array must not see the draft
			toks = append(toks[:len(toks):len(toks)], sc.Draft...)
		}
		in := backend.SeqInput{Tokens: toks, Pos: sc.Start, Rows: 1 + len(sc.Draft),
			Blocks: e.pool.Blocks(kvcache.SeqID(sc.Seq.ID)), Logits: sc.Logits, Hidden: sc.Hidden, PromptLen: sc.Seq.PromptLen,
			Seq: sc.Seq.ID, Window: e.pool.Window(kvcache.SeqID(sc.Seq.ID))}
		if rs := e.states[sc.Seq.ID]; rs != nil {
			e.recurrentShare(&in, rs, sc.Start, sc.N)
		}
		batch.Seqs = append(batch.Seqs, in)
	}
}

// failAll ends every live request with err after a panic; one whose own
// ending panics again is dropped from the loop's books.
func (e *Engine) failAll(err error) {
	now := e.now()
	for id, rs := range e.states {
		func() {
			defer func() {
				if r := recover(); r != nil {
					e.log.Error("ending a request after a panic panicked", "request", id, "panic", r)
					delete(e.states, id)
				}
			}()
			e.finish(rs, FinishError, err, now)
		}()
	}
}

// forward runs the backend's pass; a panic in it (a kernel's bug on one
// input) is that step's error, so its requests fail and the daemon stays.
func (e *Engine) forward(batch *backend.Batch) (logits [][]float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("forward pass panicked", "panic", r, "stack", string(debug.Stack()))
			logits, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return e.backend.Forward(batch)
}

// embedStep is the forward time embeddings may add to a step beside
// generations (Scheduler.embedAllowance).
const embedStep = 25 * time.Millisecond

// contendedCap is the prefill a step may take while another engine shares
// the cores: about contendedStep of forward work at this engine's prompt
// rate (0: no cap).
func (e *Engine) contendedCap() int {
	if e.seat == nil || !e.seat.Contended() {
		return 0
	}
	if e.prefillRate == 0 {
		return 256
	}
	return max(32, int(e.prefillRate*contendedStep.Seconds()))
}

// notePrefillRate keeps the tokens per second of steps that were mostly
// prompt (a smoothed figure), for contendedCap.
func (e *Engine) notePrefillRate(tokens int, fwd time.Duration) {
	if tokens < 64 || fwd <= 0 {
		return
	}
	r := float64(tokens) / fwd.Seconds()
	if e.prefillRate == 0 {
		e.prefillRate = r
		return
	}
	e.prefillRate = 0.8*e.prefillRate + 0.2*r
}

// promptFirst orders a step's chunks, stably, with those that are all
// prompt ahead of the rest, so that a role-aware backend sees each role
// as one run of tokens (one pass over the weights each).
func promptFirst(seqs []sched.Scheduled) {
	slices.SortStableFunc(seqs, func(a, b sched.Scheduled) int {
		pa, pb := a.Start+a.N <= a.Seq.PromptLen, b.Start+b.N <= b.Seq.PromptLen
		switch {
		case pa == pb:
			return 0
		case pa:
			return -1
		}
		return 1
	})
}

// afterForward advances every sequence of a finished step, samples the
// tokens that were asked for and records the step.
func (e *Engine) afterForward(step *sched.Step, logits [][]float32, now time.Time, fwd time.Duration) {
	generated, prompt := 0, 0
	for i, sc := range step.Seqs {
		rs := e.states[sc.Seq.ID]
		if !rs.scheduled {
			rs.scheduled = true
			rs.started.Store(true)
			e.mu.Lock()
			e.pending--
			e.pendingC[rs.req.Channel]--
			e.mu.Unlock()
		}
		e.sched.Advance(sc)
		if sc.Start < sc.Seq.PromptLen {
			prompt += min(sc.Start+sc.N, sc.Seq.PromptLen) - sc.Start
		}
		generated += e.seqOutput(rs, sc, logits[i], now)
	}
	pt := stepPoint{at: now, seqs: len(step.Seqs), max: e.sched.Config().MaxNumSeqs, fwd: fwd}
	for _, sc := range step.Seqs {
		pt.channel[channelIndex(sc.Seq.Channel)]++
	}
	e.mu.Lock()
	if prompt == 0 {
		e.spec.cost.noteStep(step.Tokens, fwd)
	}
	e.rec.step(now, len(step.Seqs), step.Tokens, prompt, generated, fwd)
	if ec, ok := e.backend.(backend.ExpertCounter); ok {
		l := ec.ExpertLoad()
		e.rec.experts.Layers += l.Layers
		e.rec.experts.Pairs += l.Pairs
		e.rec.experts.Touched += l.Touched
	}
	e.rec.dash.step(pt)
	e.mu.Unlock()
	e.obs.Step(len(step.Seqs), step.Tokens)
	e.publish()
}

// seqOutput takes one sequence's share of a finished step (its logits,
// hidden states, or the end of its prefill) and returns how many tokens it
// generated. A panic here fails this request alone (logged with its stack),
// never the loop: the other sequences of the step go on.
func (e *Engine) seqOutput(rs *reqState, sc sched.Scheduled, row []float32, now time.Time) (generated int) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("request failed: internal error", "request", sc.Seq.ID, "panic", r, "stack", string(debug.Stack()))
			e.finish(rs, FinishError, fmt.Errorf("%w: %v", ErrInternal, r), now)
		}
	}()
	switch {
	case sc.Seq.Prefill:
		if sc.Start+sc.N >= sc.Seq.PromptLen {
			e.prefilled(rs, now)
		}
		return 0
	case sc.Hidden && rs.pool != nil:
		e.pooled(rs, sc, row, now)
		return 0
	case !sc.Logits || sc.Seq.Padding:
		return 0
	case len(sc.Draft) > 0:
		return e.verify(rs, sc, row, now)
	case rs.constrains():
		e.constrainedToken(rs, row, sc.Seq.Tokens, now)
		return 1
	}
	if rs.req.Logprobs { // the sampler edits the row (penalties): keep the model's own
		rs.raw = append(rs.raw[:0], row...)
	}
	tok, err := checked(row, rs.sampler.Sample(row, sc.Seq.Tokens))
	if err != nil {
		e.finish(rs, FinishError, err, now)
		return 1
	}
	var lp *sample.Logprob
	if rs.req.Logprobs {
		l := sample.LogProbs(rs.raw, tok, rs.req.TopLogprobs)
		lp = &l
	}
	e.onToken(rs, tok, lp, now)
	return 1
}

// idle waits for new input, a batch window to close, or the heartbeat tick.
func (e *Engine) idle(ctx context.Context) {
	d := idleTick
	if at, ok := e.sched.NextWake(); ok {
		d = min(d, max(at.Sub(e.now()), 0))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.wake:
	case <-ctx.Done():
	case <-t.C:
	}
}

// takeInbox moves new requests into the scheduler and applies cancels and config.
func (e *Engine) takeInbox(now time.Time) {
	e.mu.Lock()
	inbox, cancels, cfg := e.inbox, e.cancels, e.newCfg
	e.inbox, e.cancels, e.newCfg = nil, nil, nil
	e.mu.Unlock()
	if cfg != nil {
		e.sched.SetConfig(*cfg)
		e.log.Info("scheduler config applied", "policy", cfg.Policy, "max_num_seqs", cfg.MaxNumSeqs,
			"max_num_batched_tokens", cfg.MaxNumBatchedTokens)
	}
	for _, rs := range inbox {
		e.states[rs.seq.ID] = rs
		e.sched.Add(rs.seq)
	}
	for _, c := range cancels {
		if rs, ok := e.states[c.id]; ok {
			e.finish(rs, c.reason, c.err, now)
		}
	}
}

func (e *Engine) notePreempted(step *sched.Step) {
	for _, seq := range step.Preempted {
		e.log.Debug("preempted", "request", seq.ID, "priority", seq.Priority, "tokens", len(seq.Tokens))
	}
}

// constrainedToken samples a token the request's grammar allows.
func (e *Engine) constrainedToken(rs *reqState, row []float32, history []int, now time.Time) {
	if rs.req.Logprobs {
		rs.raw = append(rs.raw[:0], row...)
	}
	tok, err := e.sampleConstrained(rs, row, history)
	if err != nil {
		e.finish(rs, FinishError, err, now)
		return
	}
	var lp *sample.Logprob
	if rs.req.Logprobs { // of the model's own distribution, as llama.cpp reports them: before the grammar
		l := sample.LogProbs(rs.raw, tok, rs.req.TopLogprobs)
		lp = &l
	}
	e.onToken(rs, tok, lp, now)
}

// onToken handles one sampled token: stop checks, text delta, limits.
func (e *Engine) onToken(rs *reqState, tok int, lp *sample.Logprob, now time.Time) {
	seq := rs.seq
	if slices.Contains(rs.stopIDs, tok) {
		e.finish(rs, FinishStop, nil, now)
		return
	}
	if rs.gm != nil {
		if err := e.grammarStep(rs, tok); err != nil {
			e.finish(rs, FinishError, err, now)
			return
		}
	}
	seq.Tokens = append(seq.Tokens, tok)
	rs.generated.Add(1)
	e.mu.Lock()
	first := rs.firstToken.IsZero()
	if first {
		rs.firstToken = now
		e.rec.ttft.add(now.Sub(seq.Arrival).Seconds())
		if e.rec.ttftBy == nil {
			e.rec.ttftBy = map[string]*window{}
		}
		w := e.rec.ttftBy[rs.req.Channel]
		if w == nil {
			w = &window{}
			e.rec.ttftBy[rs.req.Channel] = w
		}
		w.add(now.Sub(seq.Arrival).Seconds())
	} else {
		e.rec.itl.add(now.Sub(rs.lastToken).Seconds())
	}
	e.mu.Unlock()
	if first {
		e.obs.FirstToken(rs.req.Channel, now.Sub(seq.Arrival), now.Sub(seq.FirstSched))
	} else {
		e.obs.InterToken(rs.req.Channel, now.Sub(rs.lastToken))
	}
	rs.lastToken = now
	text, stopped := rs.stop.feed(rs.detok.Add(tok))
	ev := Event{Text: text, Tokens: []int{tok}}
	if lp != nil {
		ev.Logprobs = []sample.Logprob{*lp}
	}
	rs.stream.push(ev)
	switch {
	case stopped || rs.grammarActive() && rs.gm.Done():
		rs.detok.Flush()
		e.finish(rs, FinishStop, nil, now)
	case seq.Generated() >= seq.MaxTokens || len(seq.Tokens) >= e.m.Config.Context:
		e.finish(rs, FinishLength, nil, now)
	}
}

// finish ends a request: frees its blocks, flushes held text and sends the
// terminal event. Safe to call once per request; later calls do nothing.
func (e *Engine) finish(rs *reqState, reason FinishReason, err error, now time.Time) {
	if rs == nil || rs.ended {
		return
	}
	rs.ended = true
	seq := rs.seq
	padded := e.sched.Finish(seq)
	// Release text held for an incomplete character or a possible stop string.
	tail, stopped := rs.stop.feed(rs.detok.Flush())
	if !stopped {
		tail += rs.stop.flush()
	}
	if tail != "" {
		rs.stream.push(Event{Text: tail})
	}
	done := Event{Done: true, Finish: reason, StopString: rs.stop.matched, Err: err, Preemptions: seq.Preemptions, Embedding: rs.embedding,
		Usage:   Usage{PromptTokens: seq.PromptLen, CompletionTokens: seq.Generated(), CachedPromptTokens: seq.CachedTokens},
		Timings: Timings{Total: now.Sub(seq.Arrival)}}
	if !seq.FirstSched.IsZero() {
		done.Timings.Queue = seq.FirstSched.Sub(seq.Arrival)
	}
	if !rs.firstToken.IsZero() {
		done.Timings.FirstToken = rs.firstToken.Sub(seq.Arrival)
	}
	if padded { // request-level batching: the result goes out with the batch
		rs.done, rs.reason = &done, reason
		return
	}
	e.deliver(rs, done, now)
}

// deliver does the bookkeeping of an ended request and sends its terminal event.
func (e *Engine) deliver(rs *reqState, done Event, now time.Time) {
	seq := rs.seq
	delete(e.states, seq.ID)
	if e.spec.drafter != nil {
		e.spec.drafter.ended(seq.ID)
	}
	e.mu.Lock()
	if rs.cancelled && done.Finish != FinishCancelled && done.Finish != FinishError {
		// Cancel was told yes before the loop saw it: keep its word.
		done.Finish = FinishCancelled
	}
	reason := done.Finish
	delete(e.live, seq.ID)
	if !rs.scheduled {
		e.pending--
		e.pendingC[rs.req.Channel]--
		rs.scheduled = true
	}
	if !seq.FirstSched.IsZero() {
		e.rec.queue.add(done.Timings.Queue.Seconds())
	}
	e.rec.e2e.add(done.Timings.Total.Seconds())
	e.rec.dash.end(now, rs.req.Channel, done.Timings.Queue, done.Timings.Total, !seq.FirstSched.IsZero())
	e.rec.finish(reason)
	if e.drained != nil && len(e.live) == 0 {
		select {
		case <-e.drained:
		default:
			close(e.drained)
		}
	}
	e.mu.Unlock()
	rec := FinishRecord{Channel: rs.req.Channel, Reason: reason, Queue: done.Timings.Queue, E2E: done.Timings.Total,
		PromptTokens: seq.PromptLen, CompletionTokens: done.Usage.CompletionTokens, CachedTokens: seq.CachedTokens}
	if !rs.firstToken.IsZero() {
		rec.Decode = now.Sub(rs.firstToken)
	}
	e.obs.Finished(rec)
	e.publish() // so that Stats agrees with the pool once the terminal event is out
	rs.stream.push(done)
}

// shutdown ends everything still live, including requests still in the inbox.
func (e *Engine) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.takeInbox(e.now())
	defer e.saveCache("shutdown") // after the requests have ended
	now := e.now()
	for _, rs := range e.states {
		if rs.done != nil { // ended in a batch that will not finish now
			e.deliver(rs, *rs.done, now)
			continue
		}
		e.finish(rs, FinishCancelled, ErrClosed, now)
	}
	e.dropStates()
	e.publish()
}

// publish copies the loop's figures into the snapshot Stats reads.
func (e *Engine) publish() {
	if e.kvEvents != nil {
		if ev := e.pool.TakeEvents(); len(ev) > 0 {
			e.kvEvents.KVEvents(ev)
		}
	}
	u := e.pool.Usage()
	cfg := e.sched.Config()
	e.mu.Lock()
	s := &e.snap
	s.Mode, s.Policy = cfg.Mode.String(), cfg.Policy.String()
	s.MaxNumSeqs, s.MaxNumBatchedTokens = cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens
	s.Running, s.Waiting = e.sched.Running(), e.sched.Waiting()+len(e.inbox)
	s.RunningByChannel, s.WaitingByChannel = e.sched.ByChannel()
	for _, rs := range e.inbox {
		s.WaitingByChannel[rs.req.Channel]++
	}
	s.KVBlocksTotal, s.KVBlocksUsed, s.KVBlocksCached, s.KVBlocksTouched = u.Total, u.Used, u.Cached, u.Touched
	s.KVBlocksPinned = e.pinnedBlocks()
	if e.rstates.b != nil {
		s.RecurrentStates, s.RecurrentSnapshots = len(e.rstates.held), e.rstates.b.Snapshots()
	}
	e.gauges.running.Store(int64(s.Running))
	e.gauges.waiting.Store(int64(s.Waiting))
	e.gauges.kvUsed.Store(int64(u.Used))
	s.KVUsage = float64(u.Used) / float64(u.Total)
	s.KVWindowBlocksUsed, s.KVWindowBlocksCached = u.WindowUsed, u.WindowCached
	s.BlockSize = e.pool.BlockSize()
	s.PrefixQueries, s.PrefixHits = u.Queries, u.Hits
	s.Preemptions = e.sched.Preemptions()
	s.SpecDrafted, s.SpecAccepted, s.SpecShares = e.spec.drafted, e.spec.kept, e.spec.shares
	e.mu.Unlock()
}

// control feeds the adaptive controller an observation every interval and
// applies its decision to the scheduler.
func (e *Engine) control(now time.Time) {
	if e.ctl.c == nil || now.Sub(e.ctl.at) < e.ctl.c.Interval() {
		return
	}
	dt := now.Sub(e.ctl.at)
	e.mu.Lock()
	o := sched.Observation{Now: now, QPS: float64(e.rec.submitted-e.ctl.submitted) / dt.Seconds(),
		Queue: e.sched.Waiting() + len(e.inbox), Running: e.sched.Running(),
		P95ITL:      time.Duration(e.rec.itl.recentP95(256) * float64(time.Second)),
		Utilization: e.ctl.busy.Seconds() / dt.Seconds()}
	// The TTFT target is the realtime channel's, judged on realtime requests
	// only: other channels' waits under overload are queueing, which a
	// smaller batch would only make worse.
	if w := e.rec.ttftBy["realtime"]; w != nil && w.count > 0 {
		o.P95TTFT = time.Duration(w.recentP95(64) * float64(time.Second))
	}
	e.ctl.submitted = e.rec.submitted
	e.mu.Unlock()
	e.ctl.at, e.ctl.busy = now, 0
	d, changed := e.ctl.c.Observe(o)
	if changed {
		cfg := e.sched.Config()
		cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = d.Seqs, d.Tokens
		e.sched.SetConfig(cfg)
		e.log.Debug("adaptive control", "level", d.Level, "max_num_seqs", d.Seqs, "max_num_batched_tokens", d.Tokens,
			"reason", d.Reason, "qps", o.QPS, "queue", o.Queue, "p95_ttft", o.P95TTFT, "p95_itl", o.P95ITL,
			"utilization", o.Utilization)
	}
	st := e.ctl.c.State()
	e.mu.Lock()
	e.snap.Controller = &st
	e.mu.Unlock()
}
