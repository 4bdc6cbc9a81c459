package serve

import (
	"context"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/tokenizer"
)

var _ ipc.Embedder = (*Service)(nil)

// maxEmbedBytes bounds one embed request's text (every input together).
const maxEmbedBytes = 8 << 20

// poolingOf is the model's pooling: the file's <arch>.pooling_type; a
// model that declares none embeds with mean pooling, as Ollama serves
// embeddings from chat models.
func poolingOf(lm *LoadedModel) (engine.Pooling, error) {
	switch lm.Model.Config.Pooling {
	case 0, 1:
		return engine.PoolMean, nil
	case 2:
		return engine.PoolCLS, nil
	case 3:
		return engine.PoolLast, nil
	}
	if lm.Model.Rank != nil {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "model %s is a reranker: it scores documents (rerank), it does not embed", lm.Name)
	}
	return 0, wire.Errorf(wire.CodeInvalidArgument, "model %s pools with type %d: not an embedding model batchd serves",
		lm.Name, lm.Model.Config.Pooling)
}

// Embed computes one vector per input: each input is a prefill-only
// request of the model's engine (batched with whatever else runs), the
// inputs submitted together.
func (svc *Service) Embed(ctx context.Context, p ipc.Peer, e *wire.Embed) (*wire.Embed, error) {
	if err := svc.waitReady(ctx); err != nil {
		return nil, err
	}
	n := len(e.Input) + len(e.Tokens)
	switch {
	case len(e.Input) > 0 && len(e.Tokens) > 0:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "embed: give input or tokens, not both")
	case n == 0:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "embed: no input")
	case n > wire.MaxEmbedInputs:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "embed: %d inputs: at most %d", n, wire.MaxEmbedInputs)
	case e.Dimensions < 0:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "dimensions %d: want 0 (all) or more", e.Dimensions)
	case e.Channel != "" && !config.IsChannel(e.Channel):
		return nil, wire.Errorf(wire.CodeInvalidArgument, "channel %q: want realtime, standard or bulk", e.Channel)
	}
	if err := checkTags(e.Tags); err != nil {
		return nil, err
	}
	bytes := 0
	for _, s := range e.Input {
		if bytes += len(s); bytes > maxEmbedBytes {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "embed: more than %d bytes of input", maxEmbedBytes)
		}
	}
	keepAlive, err := svc.keepAliveFor(p, e.KeepAlive)
	if err != nil {
		return nil, err
	}
	lm, lease, err := svc.acquireModel(ctx, e.Model, keepAlive)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	pool, err := poolingOf(lm)
	if err != nil {
		return nil, err
	}
	if e.Dimensions > lm.Model.Config.Dim {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "dimensions %d: the model's vectors have %d", e.Dimensions, lm.Model.Config.Dim)
	}
	inputs, err := embedInputs(ctx, lm, e)
	if err != nil {
		return nil, err
	}
	normalize := e.Normalize == nil || *e.Normalize
	reqs := make([]engine.Request, len(inputs))
	for i, toks := range inputs {
		// Placed as a generation would be: its channel's compliance rules
		// and, in an isolated channel, the user's own cache chain (its
		// blocks were everyone's before).
		channel, salt, err := svc.placement(p.UID, e.Channel, e.Tags, len(toks), "")
		if err != nil {
			return nil, err
		}
		reqs[i] = engine.Request{Tokens: toks, Owner: p.UID, Channel: channel, CacheSalt: salt,
			Embed: &engine.Embed{Pooling: pool, Normalize: normalize}}
	}
	vecs, used, err := svc.embedAll(ctx, p, lm, reqs)
	if err != nil {
		return nil, err
	}
	out := &wire.Embed{Model: lm.Name, Embeddings: make([][]float32, len(inputs)), PromptTokens: used}
	for i, v := range vecs {
		out.Embeddings[i] = truncated(v, e.Dimensions, normalize)
	}
	return out, nil
}

// embedAll runs the inputs, each an engine request counted against the
// user's cap as a request is: the call holds one slot already (the
// caller's), takes as many more as the cap leaves it, and keeps that many
// inputs in flight, so that 2,048 inputs are 2,048 requests' worth of
// work for the cap, not one. A failed input ends the others.
func (svc *Service) embedAll(ctx context.Context, p ipc.Peer, lm *LoadedModel, reqs []engine.Request) ([][]float32, int, error) {
	window := 1
	for window < len(reqs) && svc.access.AcquireUser(p) == nil {
		window++
	}
	defer func() {
		for range window - 1 {
			svc.access.ReleaseUser(p)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vecs := make([][]float32, len(reqs))
	streams := make([]*engine.Stream, len(reqs))
	used, next := 0, 0
	for i := range reqs {
		for ; next < len(reqs) && next < i+window; next++ {
			st, err := lm.Engine.Submit(ctx, reqs[next])
			if err != nil {
				return nil, 0, wireError(err)
			}
			streams[next] = st
		}
		_, _, done, err := streams[i].Wait(context.Background()) // cancel reaches it through ctx
		if err != nil {
			return nil, 0, wireError(err)
		}
		if done.Finish != engine.FinishStop {
			if done.Err != nil {
				return nil, 0, wireError(done.Err)
			}
			return nil, 0, wire.Errorf(wire.CodeUnavailable, "embed: input %d ended %s", i, done.Finish)
		}
		vecs[i] = done.Embedding
		used += done.Usage.PromptTokens
	}
	return vecs, used, nil
}

// embedInputs tokenizes the inputs as llama-server embeds them (special
// tokens added and parsed), cut to the context when truncate allows: the
// text is cut and what the tokenizer appends after it ([SEP], an EOS that
// LAST pooling reads) is kept, so the model still ends on what it was
// trained to end on.
func embedInputs(ctx context.Context, lm *LoadedModel, e *wire.Embed) ([][]int, error) {
	limit := lm.Model.Config.Context
	if lm.ContextLimit > 0 {
		limit = min(limit, lm.ContextLimit)
	}
	truncate := e.Truncate == nil || *e.Truncate
	out, suffix := e.Tokens, 0
	if len(e.Input) > 0 {
		suffix = min(lm.Model.Tokenizer.Suffix(), limit-1)
		out = make([][]int, len(e.Input))
		tok := lm.Model.Tokenizer
		for i, s := range e.Input {
			if !truncate && tok.MinTokens(s) > limit {
				return nil, wire.Errorf(wire.CodeInvalidArgument, "input %d: %d bytes are at least %d tokens, more than the context of %d (truncate is off)",
					i, len(s), tok.MinTokens(s), limit)
			}
			if truncate { // only the first limit tokens are kept: tokenize no more text than holds them
				s = tok.Covering(s, limit)
			}
			toks, err := tok.Tokenize(ctx, s, tokenizer.Options{AddSpecial: true, ParseSpecial: true})
			if err != nil {
				return nil, wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
			}
			out[i] = toks
		}
	}
	for i, toks := range out {
		switch {
		case len(toks) == 0:
			return nil, wire.Errorf(wire.CodeInvalidArgument, "input %d: no tokens", i)
		case len(toks) > limit && truncate: // the text is cut; an appended [SEP] or EOS stays last
			out[i] = append(toks[:limit-suffix], toks[len(toks)-suffix:]...)
		case len(toks) > limit:
			return nil, wire.Errorf(wire.CodeInvalidArgument, "input %d: %d tokens, more than the context of %d (truncate is off)",
				i, len(toks), limit)
		}
	}
	return out, nil
}

// truncated keeps a vector's first dims values (Matryoshka), normalised
// again; dims 0 keeps it whole.
func truncated(v []float32, dims int, normalize bool) []float32 {
	if dims == 0 || dims >= len(v) {
		return v
	}
	v = v[:dims]
	if normalize {
		engine.Normalize(v)
	}
	return v
}
