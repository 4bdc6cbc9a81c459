package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/batchd/batchd/config"

	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

func generate(t *testing.T, args ...string) []generateResult {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), append([]string{"generate"}, args...), &runEnv{stdout: &out, stderr: &errb}); err != nil {
		t.Fatalf("generate %v: %v\n%s", args, err, errb.String())
	}
	var res []generateResult
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r generateResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		res = append(res, r)
	}
	return res
}

func checkGoldens(t *testing.T, goldens []testmodels.Golden, res []generateResult) {
	t.Helper()
	if len(res) != len(goldens) {
		t.Fatalf("%d results for %d prompts", len(res), len(goldens))
	}
	for i, g := range goldens {
		r := res[i]
		if r.Prompt != g.Prompt || !slices.Equal(r.PromptTokens, g.PromptTokens) ||
			!slices.Equal(r.OutputTokens, g.OutputTokens) || r.Text != g.Text {
			t.Fatalf("prompt %q: got %d tokens %q, want %d tokens %q", g.Prompt, len(r.OutputTokens), r.Text,
				len(g.OutputTokens), g.Text)
		}
		want := map[string]string{"steps": "length", "bos": "stop"}[g.Stop]
		if r.FinishReason != want {
			t.Fatalf("prompt %q: finish %s, want %s", g.Prompt, r.FinishReason, want)
		}
	}
}

// TestGenerateGoldens runs the golden prompts through `batchd generate`, each
// alone and all together in one call, from both model formats; forcing
// chunked prefill and preemption in a tiny pool changes nothing.
func TestGenerateGoldens(t *testing.T) {
	goldens := testmodels.Goldens(t)
	// K and V as float32: one golden step is a near tie (logits 5e-4
	// apart) that half-float K and V may decide either way on some CPUs;
	// the backend's tests check half floats step by step.
	models := map[string][]string{
		"llama2c": {"--model", testmodels.Path(t, "stories260K.bin"), "--tokenizer", testmodels.Path(t, "tok512.bin"), "--kv-cache-type", "f32"},
		// The goldens are run.c's, which stops on BOS; a GGUF model stops on
		// its end-of-generation set only, as llama.cpp does.
		"gguf": {"--model", testmodels.Path(t, "stories260K.gguf"), "--stop-token-id", "1", "--kv-cache-type", "f32"},
	}
	for name, margs := range models {
		t.Run(name, func(t *testing.T) {
			var all []string
			var alone []generateResult
			for _, g := range goldens {
				args := append(slices.Clone(margs), "--json", "--max-tokens", strconv.Itoa(g.MaxTokens()), "--prompt", g.Prompt)
				alone = append(alone, generate(t, args...)...)
				all = append(all, "--prompt", g.Prompt)
			}
			checkGoldens(t, goldens, alone)
			// Together, under one --max-tokens: each golden must be a prefix
			// of its result, and the one that stopped on BOS must stop there.
			together := generate(t, append(append(slices.Clone(margs), "--json", "--max-tokens", "200",
				"--block-size", "4", "--kv-blocks", "120", "--max-num-batched-tokens", "8"), all...)...)
			preempted := 0
			for i, g := range goldens {
				r := together[i]
				preempted += r.Preemptions
				n := len(g.OutputTokens)
				if len(r.OutputTokens) < n || !slices.Equal(r.OutputTokens[:n], g.OutputTokens) || !strings.HasPrefix(r.Text, g.Text) {
					t.Fatalf("prompt %q together: tokens differ at %d", g.Prompt, firstDiff(r.OutputTokens, g.OutputTokens))
				}
				if g.Stop == "bos" && (len(r.OutputTokens) != n || r.FinishReason != "stop") {
					t.Fatalf("prompt %q together: %d tokens, finish %s", g.Prompt, len(r.OutputTokens), r.FinishReason)
				}
			}
			if preempted == 0 {
				t.Fatal("the tiny pool did not force a preemption")
			}
		})
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestGenerateUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	env := &runEnv{stdout: &out, stderr: &errb}
	for _, args := range [][]string{{}, {"nope"}, {"generate", "--policy", "random"}, {"generate", "--bogus"}} {
		if err := run(context.Background(), args, env); !isUsage(err) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
	if err := run(context.Background(), []string{"generate", "--model", "/nonexistent.gguf", "hi"}, env); err == nil || isUsage(err) {
		t.Errorf("missing model file: %v", err)
	}
}

// TestGeneratePositionalPrompt: a prompt given as an argument is used, and
// flags after it still apply (they were silently ignored, and generation ran
// from an empty prompt to the full context); no prompt is a usage error.
func TestGeneratePositionalPrompt(t *testing.T) {
	m := synth.TinyFile(t, 64)
	res := generate(t, "--model", m, "hello", "--max-tokens", "3", "--json")
	if len(res) != 1 || res[0].Prompt != "hello" || len(res[0].OutputTokens) > 3 || len(res[0].PromptTokens) < 2 {
		t.Fatalf("positional prompt: %+v", res)
	}
	res = generate(t, "--model", m, "--json", "a", "--max-tokens", "2", "b")
	if len(res) != 2 || res[0].Prompt != "a" || res[1].Prompt != "b" || len(res[1].OutputTokens) > 2 {
		t.Fatalf("two positional prompts: %+v", res)
	}
	env := &runEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	if err := run(context.Background(), []string{"generate", "--model", m}, env); !isUsage(err) {
		t.Fatalf("no prompt: %v, want a usage error", err)
	}
}

// TestGenerateSpeculative: --speculative ngram, and a draft model (the
// model as its own draft), give the tokens plain decoding gives; a draft
// method without a draft model, a draft model with another method and an
// unknown method are refused by name rather than ignored, on the command
// line and in the config.
func TestGenerateSpeculative(t *testing.T) {
	m := synth.TinyFile(t, 256)
	plain := generate(t, "--model", m, "--json", "--max-tokens", "40", "a b a b a b a b")
	spec := generate(t, "--model", m, "--json", "--max-tokens", "40", "--speculative", "ngram", "--draft-tokens", "6", "a b a b a b a b")
	if len(plain) != 1 || len(spec) != 1 || !slices.Equal(plain[0].OutputTokens, spec[0].OutputTokens) {
		t.Fatalf("with speculation %v, without %v", spec, plain)
	}
	for _, args := range [][]string{
		{"--speculative", "draft", "--draft-model", m},
		{"--draft-model", m}, // implies draft
	} {
		args = append([]string{"--model", m, "--json", "--max-tokens", "40"}, append(args, "a b a b a b a b")...)
		if got := generate(t, args...); len(got) != 1 || !slices.Equal(plain[0].OutputTokens, got[0].OutputTokens) {
			t.Fatalf("%v: %v, without speculation %v", args, got, plain)
		}
	}
	env := &runEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--speculative", "draft"}, "draft model"},
		{[]string{"--speculative", "ngram", "--draft-model", m}, "method draft"},
		{[]string{"--speculative", "eagle"}, "eagle"},
		{[]string{"--draft-model", filepath.Join(t.TempDir(), "none.gguf")}, "none.gguf"},
	} {
		args := append([]string{"generate", "--model", m}, append(tc.args, "x")...)
		if err := run(context.Background(), args, env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a refusal saying %q", tc.args, err, tc.want)
		}
	}
	c := config.Default()
	c.Model.Path = m
	c.Engine.Speculative = "draft"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "draft_model") {
		t.Errorf("speculative = draft without draft_model: %v", err)
	}
	c.Engine.DraftModel = m
	if err := c.Validate(); err != nil {
		t.Errorf("speculative = draft with draft_model: %v", err)
	}
	c.Engine.Speculative = "ngram"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "draft_model") {
		t.Errorf("speculative = ngram with draft_model: %v", err)
	}
	c.Engine.DraftModel = ""
	c.Engine.Speculative = "ngram"
	if err := c.Validate(); err != nil {
		t.Errorf("speculative = ngram: %v", err)
	}
}
