package daemon

import (
	"context"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/engine/tokenizer"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

var _ ipc.Embedder = ipcBackend{}

// maxEmbedBytes bounds one embed request's text (every input together).
const maxEmbedBytes = 8 << 20

// poolingOf is the model's pooling: the file's <arch>.pooling_type; a
// model that declares none embeds with mean pooling, as Ollama serves
// embeddings from chat models.
func poolingOf(rt *Runtime) (engine.Pooling, error) {
	switch rt.Model.Config.Pooling {
	case 0, 1:
		return engine.PoolMean, nil
	case 2:
		return engine.PoolCLS, nil
	case 3:
		return engine.PoolLast, nil
	}
	return 0, wire.Errorf(wire.CodeInvalidArgument, "model %s pools with type %d (rank): not an embedding model batchd serves",
		rt.Name, rt.Model.Config.Pooling)
}

// Embed computes one vector per input: each input is a prefill-only
// request of the model's engine (batched with whatever else runs), the
// inputs submitted together.
func (b ipcBackend) Embed(ctx context.Context, p ipc.Peer, e *wire.Embed) (*wire.Embed, error) {
	if _, err := b.d.waitReady(ctx); err != nil {
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
	case !channels[e.Channel]:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "channel %q: want realtime, standard or bulk", e.Channel)
	}
	bytes := 0
	for _, s := range e.Input {
		if bytes += len(s); bytes > maxEmbedBytes {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "embed: more than %d bytes of input", maxEmbedBytes)
		}
	}
	keepAlive, err := keepAliveOf(e.KeepAlive)
	if err != nil {
		return nil, err
	}
	rt, lease, err := b.d.acquireModel(ctx, e.Model, keepAlive)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	pool, err := poolingOf(rt)
	if err != nil {
		return nil, err
	}
	if e.Dimensions > rt.Model.Config.Dim {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "dimensions %d: the model's vectors have %d", e.Dimensions, rt.Model.Config.Dim)
	}
	inputs, err := embedInputs(ctx, rt, e)
	if err != nil {
		return nil, err
	}
	normalize := e.Normalize == nil || *e.Normalize
	streams := make([]*engine.Stream, len(inputs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a failed input ends the others
	for i, toks := range inputs {
		req := engine.Request{Tokens: toks, Owner: p.UID, Channel: b.d.route(p.UID, nil, len(toks)),
			Embed: &engine.Embed{Pooling: pool, Normalize: normalize}}
		if e.Channel != "" {
			req.Channel = e.Channel
		}
		if streams[i], err = rt.Engine.Submit(ctx, req); err != nil {
			return nil, wireError(err)
		}
	}
	out := &wire.Embed{Model: rt.Name, Embeddings: make([][]float32, len(inputs))}
	for i, st := range streams {
		_, _, done, err := st.Wait(context.Background()) // cancel reaches it through ctx
		if err != nil {
			return nil, wireError(err)
		}
		if done.Finish != engine.FinishStop {
			if done.Err != nil {
				return nil, wireError(done.Err)
			}
			return nil, wire.Errorf(wire.CodeUnavailable, "embed: input %d ended %s", i, done.Finish)
		}
		out.Embeddings[i] = truncated(done.Embedding, e.Dimensions, normalize)
		out.PromptTokens += done.Usage.PromptTokens
	}
	return out, nil
}

// embedInputs tokenizes the inputs as llama-server embeds them (special
// tokens added and parsed), cut to the context when truncate allows: the
// text is cut and what the tokenizer appends after it ([SEP], an EOS that
// LAST pooling reads) is kept, so the model still ends on what it was
// trained to end on.
func embedInputs(ctx context.Context, rt *Runtime, e *wire.Embed) ([][]int, error) {
	limit := rt.Model.Config.Context
	if rt.ContextLimit > 0 {
		limit = min(limit, rt.ContextLimit)
	}
	truncate := e.Truncate == nil || *e.Truncate
	out, suffix := e.Tokens, 0
	if len(e.Input) > 0 {
		suffix = min(rt.Model.Tokenizer.Suffix(), limit-1)
		out = make([][]int, len(e.Input))
		for i, s := range e.Input {
			toks, err := rt.Model.Tokenizer.Tokenize(ctx, s, tokenizer.Options{AddSpecial: true, ParseSpecial: true})
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
