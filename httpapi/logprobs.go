package httpapi

import (
	"encoding/json"
	"strconv"

	"github.com/batchd/batchd/ipc/wire"
)

// Limits of top alternatives: OpenAI's chat (top_logprobs) and legacy
// completions (logprobs) APIs.
const (
	maxChatTopLogprobs       = 20
	maxCompletionTopLogprobs = 5
)

// logprobsRequest reads the chat form (logprobs: bool, top_logprobs: n) or
// the completions form (logprobs: n) into the submit.
func logprobsRequest(f *samplingFields, s *wire.Submit, chat bool) *httpError {
	raw := string(f.Logprobs)
	if chat {
		var on bool
		if raw != "" && raw != "null" && json.Unmarshal(f.Logprobs, &on) != nil {
			return errInvalid("logprobs", "logprobs: want true or false")
		}
		s.Logprobs = on
		if f.TopLogprobs != nil {
			if *f.TopLogprobs < 0 || *f.TopLogprobs > maxChatTopLogprobs || (*f.TopLogprobs > 0 && !on) {
				return errInvalid("top_logprobs", "top_logprobs %d: want 0 to %d, with logprobs true", *f.TopLogprobs, maxChatTopLogprobs)
			}
			s.TopLogprobs = *f.TopLogprobs
		}
		return nil
	}
	if raw == "" || raw == "null" {
		return nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || n > maxCompletionTopLogprobs {
		return errInvalid("logprobs", "logprobs: want an integer from 0 to %d", maxCompletionTopLogprobs)
	}
	s.Logprobs, s.TopLogprobs = true, n
	return nil
}

type chatTokenLogprob struct {
	Token       string             `json:"token"`
	Logprob     float32            `json:"logprob"`
	Bytes       []int              `json:"bytes"`
	TopLogprobs []chatTokenLogprob `json:"top_logprobs,omitempty"`
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
	Refusal []chatTokenLogprob `json:"refusal"`
}

func bytesOf(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// chatLogprobsOf is the chat shape: an entry per token with its top list.
func chatLogprobsOf(lps []wire.Logprob) *chatLogprobs {
	out := &chatLogprobs{Content: make([]chatTokenLogprob, len(lps))}
	for i, lp := range lps {
		e := chatTokenLogprob{Token: lp.Text, Logprob: lp.Logprob, Bytes: bytesOf(lp.Bytes), TopLogprobs: []chatTokenLogprob{}}
		for _, a := range lp.Top {
			e.TopLogprobs = append(e.TopLogprobs, chatTokenLogprob{Token: a.Text, Logprob: a.Logprob, Bytes: bytesOf(a.Bytes)})
		}
		out.Content[i] = e
	}
	return out
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// completionLogprobsOf is the legacy shape; offset is where the first
// token's text starts in the completion so far.
func completionLogprobsOf(lps []wire.Logprob, offset int) *completionLogprobs {
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, lp := range lps {
		out.Tokens = append(out.Tokens, lp.Text)
		out.TokenLogprobs = append(out.TokenLogprobs, lp.Logprob)
		top := map[string]float32{}
		for _, a := range lp.Top {
			if _, dup := top[a.Text]; !dup { // two ids may share a text; keep the likelier
				top[a.Text] = a.Logprob
			}
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(lp.Text)
	}
	return out
}
