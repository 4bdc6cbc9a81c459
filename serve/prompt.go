package serve

import (
	"context"
	"math/rand/v2"

	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/tokenizer"
)

// infillPrompt is llama.cpp's fill-in-the-middle prompt (prefix, suffix,
// middle: PSM): [BOS] FIM_PRE prefix FIM_SUF suffix FIM_MID, the texts
// tokenized with special-token text as text.
func infillPrompt(ctx context.Context, tok *tokenizer.Tokenizer, prefix, suffix string) ([]int, error) {
	pre, suf, mid, ok := tok.FIM()
	if !ok {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "suffix: this model's vocabulary has no fill-in-the-middle tokens")
	}
	var out []int
	if tok.AddBOS && tok.BOS >= 0 {
		out = append(out, tok.BOS)
	}
	for i, text := range []string{prefix, suffix} {
		ids, err := tok.Tokenize(ctx, text, tokenizer.Options{})
		if err != nil {
			return nil, wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
		}
		out = append(append(out, []int{pre, suf}[i]), ids...)
	}
	return append(out, mid), nil
}

// effectiveLimit is a request's context cap: its own (-1 refused later)
// within the model's.
func effectiveLimit(request, model int) int {
	if request < 0 || model == 0 || request > 0 && request < model {
		return request
	}
	return model
}

// contextLimit applies a context cap (a request's num_ctx, a model's
// context): the prompt must fit in it, and generation stops at it.
func contextLimit(maxTokens, limit, promptLen int) (int, error) {
	switch {
	case limit < 0:
		return 0, wire.Errorf(wire.CodeInvalidArgument, "context_limit %d: want 0 (the model's) or more", limit)
	case limit == 0:
		return maxTokens, nil
	case promptLen >= limit:
		return 0, wire.Errorf(wire.CodeInvalidArgument, "a prompt of %d tokens leaves no room in the context limit (num_ctx, the model's context setting) of %d",
			promptLen, limit)
	}
	room := limit - promptLen
	if maxTokens == 0 || maxTokens > room {
		return room, nil
	}
	return maxTokens, nil
}

// resolveSeed gives a submit's seed the one meaning both APIs share:
// wire.SeedRandom draws one, 0 and up are used as given.
func resolveSeed(seed int64) (uint64, error) {
	switch {
	case seed == wire.SeedRandom:
		return rand.Uint64(), nil
	case seed < 0:
		return 0, wire.Errorf(wire.CodeInvalidArgument, "seed %d: want -1 (random) or 0 and up", seed)
	}
	return uint64(seed), nil
}
