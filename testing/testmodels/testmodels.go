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
