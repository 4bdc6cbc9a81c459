package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/batchd/batchd/ipc/wire"
)

// errInvalid is a 400 with OpenAI's invalid_request_error naming param.
func errInvalid(param, format string, args ...any) *httpError {
	return &httpError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param,
		msg: fmt.Sprintf(format, args...)}
}

// submitFrom maps the shared fields to a submit; the caller sets the prompt.
func submitFrom(f *samplingFields, r *http.Request, chat bool) (*wire.Submit, *httpError) {
	s := &wire.Submit{Type: wire.TypeSubmit, Stream: true, Temperature: 1, Seed: wire.SeedRandom}
	if f.N != nil && *f.N != 1 {
		return nil, errInvalid("n", "n = %d: batchd serves one choice per request (n = 1)", *f.N)
	}
	if herr := logprobsRequest(f, s, chat); herr != nil {
		return nil, herr
	}
	if len(f.LogitBias) > 0 {
		return nil, errInvalid("logit_bias", "logit_bias is not supported")
	}
	max := f.MaxTokens
	if f.MaxCompletionTokens != nil {
		max = f.MaxCompletionTokens
	}
	if max != nil {
		switch {
		case *max < 1:
			return nil, errInvalid("max_tokens", "max_tokens %d: want at least 1", *max)
		case *max > math.MaxInt32:
			return nil, errInvalid("max_tokens", "max_tokens %d: want at most %d (and at most the model's context)", *max, math.MaxInt32)
		}
		s.MaxTokens = int(*max)
	}
	for _, v := range []struct {
		name string
		src  *float64
		dst  *float32
	}{{"temperature", f.Temperature, &s.Temperature}, {"top_p", f.TopP, &s.TopP}, {"min_p", f.MinP, &s.MinP},
		{"frequency_penalty", f.FrequencyPenalty, &s.FrequencyPenalty}, {"presence_penalty", f.PresencePenalty, &s.PresencePenalty},
		{"repetition_penalty", f.RepetitionPenalty, &s.RepetitionPenalty}} {
		if v.src == nil {
			continue
		}
		if math.Abs(*v.src) > math.MaxFloat32 {
			return nil, errInvalid(v.name, "%s %v: out of range", v.name, *v.src)
		}
		*v.dst = float32(*v.src)
	}
	s.IgnoreEOS = f.IgnoreEOS
	if f.TopK != nil {
		s.TopK = *f.TopK
	}
	if f.Seed != nil {
		if *f.Seed < wire.SeedRandom {
			return nil, errInvalid("seed", "seed %d: want -1 (random) or 0 and up", *f.Seed)
		}
		s.Seed = *f.Seed
	}
	if herr := structuredFrom(f, s); herr != nil {
		return nil, herr
	}
	stops, err := f.stops()
	if err != nil {
		return nil, errInvalid("stop", "%v", err)
	}
	s.Stop = stops
	s.Channel, s.CacheSalt, s.Tags = f.Channel, f.CacheSalt, f.Tags
	if h := r.Header.Get("X-Batchd-Channel"); h != "" {
		s.Channel = h
	}
	if f.Priority != nil {
		s.Priority = *f.Priority
	}
	if h := r.Header.Get("X-Batchd-Priority"); h != "" {
		p, err := strconv.Atoi(h)
		if err != nil {
			return nil, errInvalid("priority", "X-Batchd-Priority %q: want an integer", h)
		}
		s.Priority = p
	}
	return s, nil
}

// chatSubmit validates a chat request and maps it to a submit.
func chatSubmit(req *chatRequest, r *http.Request) (*wire.Submit, *httpError) {
	if len(req.Messages) == 0 || string(req.Messages) == "null" {
		return nil, errInvalid("messages", "messages: required")
	}
	s, herr := submitFrom(&req.samplingFields, r, true)
	if herr != nil {
		return nil, herr
	}
	s.Messages = wire.JSON(req.Messages)
	if herr := toolsFrom(req, s); herr != nil {
		return nil, herr
	}
	return s, nil
}

// completionSubmit validates a completion request and maps it to a submit.
// prompt is a string, an array of one string, an array of token ids, or an
// array of one such array.
func completionSubmit(req *completionRequest, r *http.Request) (*wire.Submit, *httpError) {
	if req.Echo {
		return nil, errInvalid("echo", "echo is not supported")
	}
	if req.BestOf != nil && *req.BestOf != 1 {
		return nil, errInvalid("best_of", "best_of = %d: only 1 is served", *req.BestOf)
	}
	s, herr := submitFrom(&req.samplingFields, r, false)
	if herr != nil {
		return nil, herr
	}
	var text string
	var texts []string
	var ids []int
	var idss [][]int
	if req.Suffix != nil && *req.Suffix != "" && json.Unmarshal(req.Prompt, &text) != nil {
		return nil, errInvalid("suffix", "suffix needs a prompt that is one string")
	}
	switch p := req.Prompt; {
	case len(p) == 0 || string(p) == "null":
		return nil, errInvalid("prompt", "prompt: required")
	case json.Unmarshal(p, &text) == nil:
		s.Prompt = text
		if req.Suffix != nil {
			s.Suffix = *req.Suffix // fill in the middle (the vocabulary's FIM tokens)
		}
	case json.Unmarshal(p, &texts) == nil && len(texts) == 1:
		s.Prompt = texts[0]
	case json.Unmarshal(p, &ids) == nil && len(ids) > 0:
		s.Tokens = ids
	case json.Unmarshal(p, &idss) == nil && len(idss) == 1 && len(idss[0]) > 0:
		s.Tokens = idss[0]
	case len(texts) > 1 || len(idss) > 1:
		return nil, errInvalid("prompt", "prompt: batchd serves one prompt per request")
	default:
		return nil, errInvalid("prompt", "prompt: want a string or an array of token ids")
	}
	if s.Prompt == "" && s.Tokens == nil {
		return nil, errInvalid("prompt", "prompt: empty")
	}
	return s, nil
}
