package serve

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/tokenizer"
)

var _ ipc.Reranker = (*Service)(nil)

// Rerank scores each document against the query with the model's head:
// one prefill-only request per pair, batched with whatever else runs, as
// embeddings are; the results sorted by score, best first.
func (svc *Service) Rerank(ctx context.Context, p ipc.Peer, r *wire.Rerank) (*wire.Rerank, error) {
	if err := svc.waitReady(ctx); err != nil {
		return nil, err
	}
	switch {
	case len(r.Documents) == 0:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "rerank: no documents")
	case len(r.Documents) > wire.MaxEmbedInputs:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "rerank: %d documents: at most %d", len(r.Documents), wire.MaxEmbedInputs)
	case r.TopN < 0:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "top_n %d: want 0 (all) or more", r.TopN)
	case r.Channel != "" && !config.IsChannel(r.Channel):
		return nil, wire.Errorf(wire.CodeInvalidArgument, "channel %q: want realtime, standard or bulk", r.Channel)
	}
	if err := checkTags(r.Tags); err != nil {
		return nil, err
	}
	bytes := len(r.Query) * len(r.Documents) // the query is in every pair
	for _, d := range r.Documents {
		if bytes += len(d); bytes > maxEmbedBytes {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "rerank: more than %d bytes of query and documents (the query counts once per document)", maxEmbedBytes)
		}
	}
	keepAlive, err := svc.keepAliveFor(p, r.KeepAlive)
	if err != nil {
		return nil, err
	}
	lm, lease, err := svc.acquireModel(ctx, r.Model, keepAlive)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	if lm.Model.Rank == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "model %s is not a reranker (its file does not pool with rank)", lm.Name)
	}
	limit := lm.Model.Config.Context
	if lm.ContextLimit > 0 {
		limit = min(limit, lm.ContextLimit)
	}
	reqs := make([]engine.Request, len(r.Documents))
	for i, d := range r.Documents {
		toks, err := RerankTokens(ctx, lm.Model, r.Query, d)
		if err != nil {
			return nil, wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
		}
		if len(toks) > limit {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "document %d: the query and it are %d tokens, more than the context of %d", i, len(toks), limit)
		}
		channel, salt, err := svc.placement(p.UID, r.Channel, r.Tags, len(toks), "")
		if err != nil {
			return nil, err
		}
		reqs[i] = engine.Request{Tokens: toks, Owner: p.UID, Channel: channel, CacheSalt: salt,
			Embed: &engine.Embed{Pooling: engine.PoolRank}}
	}
	scores, used, err := svc.embedAll(ctx, p, lm, reqs)
	if err != nil {
		return nil, err
	}
	out := &wire.Rerank{Model: lm.Name, PromptTokens: used, Results: make([]wire.RerankResult, len(scores)), Probabilities: lm.Model.Rank.Softmax}
	for i, s := range scores {
		out.Results[i] = wire.RerankResult{Index: i, Score: s[0]}
	}
	// Best first; a tie keeps the documents' order.
	slices.SortStableFunc(out.Results, func(a, b wire.RerankResult) int { return cmp.Compare(b.Score, a.Score) })
	if r.TopN > 0 && r.TopN < len(out.Results) {
		out.Results = out.Results[:r.TopN]
	}
	return out, nil
}

// RerankTokens pairs a query and a document as llama-server's rerank route
// does: the file's rerank template with {query} and {document} filled in
// (in one pass, so a query that contains "{document}" stays as it is),
// tokenized whole with special tokens parsed; without one, [BOS] query
// [EOS] [SEP] document [EOS] as the vocabulary's add flags say, [SEP]
// standing in for an EOS the vocabulary lacks (WordPiece).
func RerankTokens(ctx context.Context, m *model.Model, query, doc string) ([]int, error) {
	tok := m.Tokenizer
	if m.Rank != nil && m.Rank.Template != "" {
		text := strings.NewReplacer("{query}", query, "{document}", doc).Replace(m.Rank.Template)
		return tok.Tokenize(ctx, text, tokenizer.Options{ParseSpecial: true})
	}
	q, err := tok.Tokenize(ctx, query, tokenizer.Options{})
	if err != nil {
		return nil, err
	}
	d, err := tok.Tokenize(ctx, doc, tokenizer.Options{})
	if err != nil {
		return nil, err
	}
	eos := tok.EOS
	if eos < 0 {
		eos = tok.Sep()
	}
	out := make([]int, 0, len(q)+len(d)+4)
	if tok.AddBOS && tok.BOS >= 0 {
		out = append(out, tok.BOS)
	}
	out = append(out, q...)
	if tok.AddEOS && eos >= 0 {
		out = append(out, eos)
	}
	if tok.AddSep && tok.Sep() >= 0 {
		out = append(out, tok.Sep())
	}
	out = append(out, d...)
	if tok.AddEOS && eos >= 0 {
		out = append(out, eos)
	}
	return out, nil
}
