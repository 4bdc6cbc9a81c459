// Package testmodels finds the shared model files that tests run real
// weights from, and reads the reference generations.
package testmodels

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// EnvVar names the directory holding the model files; default ../shared/models
// relative to the project root.
const EnvVar = "BATCHD_TEST_MODELS"

// Golden is one reference generation from stories260K_golden.json.
type Golden struct {
	Prompt       string `json:"prompt"`
	Steps        int    `json:"steps"`
	PromptTokens []int  `json:"prompt_tokens"`
	OutputTokens []int  `json:"output_tokens"`
	Text         string `json:"text"`
	Stop         string `json:"stop"` // "steps" or "bos"
}

// MaxTokens returns how many tokens the reference generated at most.
func (g Golden) MaxTokens() int { return g.Steps + 1 - len(g.PromptTokens) }

// StopTokenIDs is what ends a golden run besides the length: BOS, where
// run.c stops. A GGUF model ends on its end-of-generation set only, as
// llama.cpp does, so GGUF runs of these goldens pass it explicitly.
func (g Golden) StopTokenIDs() []int {
	if g.Stop == "bos" {
		return []int{1}
	}
	return nil
}

// Tolerances of Follow: how far below the best logit the golden's token
// may be at a step where the engine picks another. run.c computes in
// float32; a different (equally valid) summation order moves logits by
// about 1e-6, and keeping K and V as half floats by about 1e-3 (a value
// near a half-float rounding boundary lands on either side).
const (
	TieF32 = 2e-4
	TieF16 = 2e-3
)

// Follow checks a greedy engine against g step by step. next feeds tokens
// (the prompt first, then one token at a time) and returns the logits of
// the last; every step is fed the golden's own token (teacher forcing), so
// a near tie does not derail the steps after it. A step whose argmax is not
// the golden's token fails unless the two logits are within tol; after the
// last token of a golden that stopped, stop must hold for the argmax (or
// again a near tie). It returns how many steps were near ties.
func (g Golden) Follow(tb testing.TB, next func(tokens []int) []float32, stop func(tok int) bool, tol float32) (ties int) {
	tb.Helper()
	in := g.PromptTokens
	for i := 0; i <= len(g.OutputTokens); i++ {
		if i == len(g.OutputTokens) && g.Stop != "bos" {
			break
		}
		l := next(in)
		best := 0
		for j := range l {
			if l[j] > l[best] {
				best = j
			}
		}
		switch {
		case i == len(g.OutputTokens):
			if !stop(best) {
				tb.Fatalf("%q: after %d tokens the argmax is %d, want a stop", g.Prompt, i, best)
			}
		case best != g.OutputTokens[i]:
			want := g.OutputTokens[i]
			if l[best]-l[want] > tol {
				tb.Fatalf("%q: step %d: argmax %d (logit %g), the golden's %d has %g: more than %g apart",
					g.Prompt, i, best, l[best], want, l[want], tol)
			}
			tb.Logf("%q: step %d: near tie, argmax %d (%g) vs the golden's %d (%g)", g.Prompt, i, best, l[best], want, l[want])
			ties++
		}
		if i < len(g.OutputTokens) {
			in = g.OutputTokens[i : i+1]
		}
	}
	return ties
}

// Dir returns the model directory, or skips the test with a hint when absent.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(EnvVar)
	if dir == "" {
		root, err := projectRoot()
		if err != nil {
			tb.Skipf("model files not found (%v); set %s to the directory holding stories260K.bin", err, EnvVar)
		}
		dir = filepath.Join(root, "..", "shared", "models")
	}
	if _, err := os.Stat(filepath.Join(dir, "stories260K.bin")); err != nil {
		tb.Skipf("model files not found in %s; set %s to the directory holding stories260K.bin", dir, EnvVar)
	}
	return dir
}

// Path returns the path of a file in the model directory.
func Path(tb testing.TB, name string) string {
	tb.Helper()
	return filepath.Join(Dir(tb), name)
}

// Goldens reads stories260K_golden.json.
func Goldens(tb testing.TB) []Golden {
	tb.Helper()
	b, err := os.ReadFile(Path(tb, "stories260K_golden.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var g []Golden
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	return g
}

func projectRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// ArchGolden is llama.cpp's greedy generation for one prompt on a tiny
// models/arch model, with its top-5 log-probabilities at every step.
type ArchGolden struct {
	Prompt       string         `json:"prompt"`
	PromptTokens []int          `json:"prompt_tokens"`
	OutputTokens []int          `json:"output_tokens"`
	Text         string         `json:"text"`
	Stop         string         `json:"stop"` // limit, eos or none
	Top5         [][][2]float64 `json:"top5"` // per step: [id, logprob], best first
	Gap12        []float64      `json:"gap12"`
}

// NearTie reports whether llama.cpp's top two at step i are within 1e-4,
// where an exact engine may pick the other.
func (g ArchGolden) NearTie(i int) bool { return i < len(g.Gap12) && g.Gap12[i] < 1e-4 }

// ArchModels lists the models in models/arch (tiny-<arch>.gguf) by arch.
var ArchModels = []string{"llama3", "qwen2", "qwen3", "phi3", "mistral", "gemma2"}

// Arch2Models lists the models of models/arch2 (the newer families) that
// batchd runs, by arch.
var Arch2Models = []string{"qwen3moe", "qwen2moe", "gemma3", "qwen35", "qwen35moe"}

// ArchGoldens reads models/arch/tiny-<arch>.golden.json.
func ArchGoldens(tb testing.TB, arch string) []ArchGolden {
	tb.Helper()
	return ArchGoldensFile(tb, filepath.Join("arch", "tiny-"+arch+".golden.json"))
}

// ArchGoldensFile reads goldens in the ArchGolden form from a file of the
// model directory (models/quant has them for each format's twin).
func ArchGoldensFile(tb testing.TB, name string) []ArchGolden {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(tb), name))
	if err != nil {
		tb.Skipf("no goldens %s: %v", name, err)
	}
	var g []ArchGolden
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	return g
}
