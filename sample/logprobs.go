package sample

import "math"

// MaxTopLogprobs bounds how many alternatives a request may ask for (OpenAI's limit).
const MaxTopLogprobs = 20

// Alt is a token and its log-probability.
type Alt struct {
	Token   int
	Logprob float32
}

// Logprob is a sampled token's log-probability under the model's own
// distribution (the softmax of the raw logits: before penalties and
// temperature, as vLLM and llama.cpp report it), with the top alternatives.
type Logprob struct {
	Alt
	Top []Alt // best first, the lowest id first on a tie
}

// LogProbs computes token's log-probability in logits and the top k
// alternatives, in two passes over the row and a k-slot insertion list.
func LogProbs(logits []float32, token, k int) Logprob {
	mx := float32(math.Inf(-1))
	for _, l := range logits {
		mx = max(mx, l)
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l - mx))
	}
	lse := float64(mx) + math.Log(sum)
	lp := func(id int) float32 { return float32(float64(logits[id]) - lse) }
	out := Logprob{Alt: Alt{Token: token}}
	if token >= 0 && token < len(logits) {
		out.Logprob = lp(token)
	}
	k = min(k, len(logits))
	if k <= 0 {
		return out
	}
	top := make([]int, 0, k)
	for id, l := range logits {
		if len(top) == k && l <= logits[top[k-1]] {
			continue
		}
		if len(top) < k {
			top = append(top, id)
		} else {
			top[k-1] = id
		}
		for j := len(top) - 1; j > 0 && logits[top[j]] > logits[top[j-1]]; j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
	out.Top = make([]Alt, len(top))
	for i, id := range top {
		out.Top[i] = Alt{Token: id, Logprob: lp(id)}
	}
	return out
}
