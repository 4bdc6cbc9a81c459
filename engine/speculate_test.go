package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/sample"
)

func sampling(temp, topP float32, seed uint64) sample.Params {
	return sample.Params{Temperature: temp, TopP: topP, Seed: seed}
}

func TestNgramDraft(t *testing.T) {
	for _, c := range []struct {
		toks []int
		k    int
		want []int
	}{
		{[]int{1, 2, 3, 4, 9, 1, 2, 3}, 3, []int{4, 9, 1}}, // the tokens after the earlier 1 2 3
		{[]int{5, 6, 5, 6, 5, 6}, 4, []int{5, 6, 5, 6}},    // a loop drafts past its own end
		{[]int{7, 7, 7}, 3, []int{7, 7, 7}},                // period one
		{[]int{1, 2, 3, 4, 5}, 3, nil},                     // nothing repeats
		{[]int{1, 2, 8, 1, 2, 9, 3, 1, 2}, 2, []int{9, 3}}, // the latest occurrence
		{[]int{4, 1, 2, 3, 5, 1, 2, 3}, 2, []int{5, 1}},    // the longest suffix first
	} {
		if got := ngramDraft(nil, c.toks, c.k, 2, 4); !slices.Equal(got, c.want) {
			t.Errorf("ngramDraft(%v, %d) = %v, want %v", c.toks, c.k, got, c.want)
		}
	}
}

// TestSpeculationIsInvisible: with n-gram speculation a request's tokens,
// text (a stop string cutting it short), logprobs and finish are those it
// gets without, greedy and sampled alike (Verify spends the sampler's
// random numbers as Draw does), alone and in a batch of eight; drafts are
// kept and refused along the way, and every KV block comes back.
func TestSpeculationIsInvisible(t *testing.T) {
	m := loadModel(t, "gguf")
	ngram := SpecConfig{Method: "ngram", Tokens: 5, MaxBatch: 16, Ungated: true}
	reqs := []Request{
		{Prompt: "Once upon a time, there was a little girl. Once upon a time, there was a little", MaxTokens: 60},
		{Prompt: "Tim and Sam went to the park. Tim and Sam", MaxTokens: 40, Logprobs: true, TopLogprobs: 2},
		{Prompt: "The cat sat. The cat sat. The cat", MaxTokens: 50, Sampling: sampling(0.9, 0.95, 42)},
		{Prompt: "Lily liked to play. Lily liked to play with her", MaxTokens: 50, Stop: []string{"ball"}, Sampling: sampling(0.7, 1, 7)},
	}
	type result struct {
		text   string
		toks   []int
		finish FinishReason
		lps    string
	}
	run := func(e *Engine, together bool) []result {
		out := make([]result, len(reqs))
		var streams []*Stream
		wait := func(i int, st *Stream) {
			var r result
			var lps []sample.Logprob
			for {
				ev, ok, err := st.Recv(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				r.text += ev.Text
				r.toks = append(r.toks, ev.Tokens...)
				lps = append(lps, ev.Logprobs...)
				if ev.Done {
					r.finish = ev.Finish
				}
			}
			r.lps = fmt.Sprint(lps)
			out[i] = r
		}
		for i, r := range reqs {
			st, err := e.Submit(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if !together {
				wait(i, st)
			}
			streams = append(streams, st)
		}
		if together {
			for i, st := range streams {
				wait(i, st)
			}
		}
		return out
	}
	want := run(startEngine(t, m, engineOpts{}), false)
	// The model as its own draft model: its greedy drafts are kept by the
	// greedy requests and refused now and then by the sampled ones.
	self := SpecConfig{Method: "draft", Tokens: 5, MaxBatch: 16, Ungated: true}
	for _, mode := range []struct {
		spec  SpecConfig
		draft *model.Model
	}{{ngram, nil}, {self, m}} {
		for _, together := range []bool{false, true} {
			e := startEngine(t, m, engineOpts{spec: mode.spec, draft: mode.draft, blockSize: 4, blocks: 128})
			got := run(e, together)
			for i := range reqs {
				if !slices.Equal(got[i].toks, want[i].toks) || got[i].text != want[i].text || got[i].finish != want[i].finish ||
					got[i].lps != want[i].lps {
					t.Errorf("%s, batched %v, request %d: with speculation\n %q %v %s\nwithout\n %q %v %s", mode.spec.Method, together, i,
						got[i].text, got[i].toks, got[i].finish, want[i].text, want[i].toks, want[i].finish)
				}
			}
			st := e.Stats()
			if st.SpecAccepted == 0 || st.SpecAccepted == st.SpecDrafted {
				t.Errorf("%s, batched %v: %d drafted, %d kept: want some kept and some refused", mode.spec.Method, together,
					st.SpecDrafted, st.SpecAccepted)
			}
			if st.KVBlocksUsed != 0 {
				t.Errorf("%s, batched %v: %d KV blocks still used", mode.spec.Method, together, st.KVBlocksUsed)
			}
			t.Logf("%s, batched %v: %d drafted, %d kept in %d verifications", mode.spec.Method, together, st.SpecDrafted,
				st.SpecAccepted, st.SpecShares)
		}
	}
}
