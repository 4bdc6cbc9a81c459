package config

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/engine/sched"
	"github.com/batchd/batchd/toolcall"
)

// ModelEntry is a [models.NAME] table: a model beside [model]'s, loaded
// when a request names it (restart fields, all of them).
type ModelEntry struct {
	Path      string   `toml:"path"`      // GGUF or llama2.c file; required
	Tokenizer string   `toml:"tokenizer"` // llama2.c tokenizer file
	Format    string   `toml:"format"`    // "", "gguf" or "llama2c"
	Aliases   []string `toml:"aliases"`   // more names ("llama3.2:3b")
	// KeepAlive: how long the model stays loaded once idle ("10m", 0
	// unloads it at once, -1 pins it); default keep_alive.
	KeepAlive    *KeepAlive `toml:"keep_alive"`
	Preload      bool       `toml:"preload"`       // load at start
	ChatTemplate string     `toml:"chat_template"` // as model.chat_template
	ToolFormat   string     `toml:"tool_format"`   // as model.tool_format
	QuantDot     string     `toml:"quant_dot"`     // as engine.quant_dot
	// The K/V types, as engine.kv_cache_type(_k, _v); unset keys take
	// [engine]'s.
	KVCacheType  string `toml:"kv_cache_type"`
	KVCacheTypeK string `toml:"kv_cache_type_k"`
	KVCacheTypeV string `toml:"kv_cache_type_v"`
	// KVTokens caps the model's KV pool in tokens; 0 is the default share
	// (multiModelKVSeqs sequences of up to multiModelKVContext tokens).
	KVTokens int `toml:"kv_tokens"`
	// Context caps each request's prompt plus output in tokens (as a
	// request's num_ctx does; a request may ask for less), and the
	// sequences its default KV share holds; 0 is the model's.
	Context int `toml:"context"`
	// Speculative decoding for this model, as [engine]'s keys: a method
	// (ngram, draft, none), a draft model's file (implies draft) and the
	// tokens drafted per step (num_speculative_tokens is vLLM's name for
	// it); unset keys take [engine]'s.
	Speculative          string `toml:"speculative"`
	DraftModel           string `toml:"draft_model"`
	DraftTokens          int    `toml:"draft_tokens"`
	NumSpeculativeTokens int    `toml:"num_speculative_tokens"`
}

// checkDraft checks a speculative method against a draft model's file.
func checkDraft(method, draftModel string) error {
	m, err := sched.ParseSpecMethod(method)
	switch {
	case err != nil:
		return err
	case m == "draft" && draftModel == "":
		return fmt.Errorf("speculative = \"draft\" needs draft_model, a file with the model's vocabulary")
	case draftModel != "" && m != "" && m != "draft":
		return fmt.Errorf("draft_model %s with speculative = %q: a draft model drafts with method draft", draftModel, m)
	}
	return nil
}

// KeepAlive is Ollama's keep_alive: a duration ("5m"), a number of
// seconds, 0 (unload when idle) or negative (forever).
type KeepAlive struct{ time.Duration }

// UnmarshalTOML takes an integer (seconds) or a string.
func (k *KeepAlive) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		k.Duration = keepAliveSeconds(float64(x))
		return nil
	case float64:
		k.Duration = keepAliveSeconds(x)
		return nil
	case string:
		d, err := ParseKeepAlive(x)
		k.Duration = d
		return err
	}
	return fmt.Errorf("keep_alive: want a duration or seconds, got %T", v)
}

func keepAliveSeconds(s float64) time.Duration {
	if s < 0 {
		return -1
	}
	return time.Duration(s * float64(time.Second))
}

// maxKeepAliveSeconds is the longest keep_alive a number may give: past
// it a Duration overflows (1e300 seconds came out negative: forever).
const maxKeepAliveSeconds = float64(math.MaxInt64/int64(time.Second)) - 1

// ParseKeepAlive reads a keep_alive string: a Go duration or a number of
// seconds; negative is forever (-1). NaN, infinities and numbers past a
// Duration are errors.
func ParseKeepAlive(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if math.IsNaN(f) || math.IsInf(f, 0) || f > maxKeepAliveSeconds {
			return 0, fmt.Errorf("keep_alive %q: want a duration (5m), seconds, 0 or -1 (forever)", s)
		}
		return keepAliveSeconds(f), nil
	}
	if l := strings.ToLower(strings.TrimLeft(s, "+-")); strings.HasPrefix(l, "inf") || l == "nan" {
		return 0, fmt.Errorf("keep_alive %q: want a duration (5m), seconds, 0 or -1 (forever)", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("keep_alive %q: want a duration (5m), seconds, 0 or -1", s)
	}
	if d < 0 {
		d = -1
	}
	return d, nil
}

// DefaultMaxLoaded is max_loaded_models' default (Ollama's).
const DefaultMaxLoaded = 3

// ModelName is the name a file's model goes by: its base name without
// the extension, as /v1/models lists it.
func ModelName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// DefaultModelName is the name [model]'s file is served under: model.name,
// else the file's name; "" without a [model] file.
func (c *Config) DefaultModelName() string {
	switch {
	case c.Model.Path == "":
		return ""
	case c.Model.Name != "":
		return c.Model.Name
	}
	return ModelName(c.Model.Path)
}

// MultiModel says whether the config names models beside [model]'s.
func (c *Config) MultiModel() bool { return c.ModelsDir != "" || len(c.Models) > 0 }

// validateModels checks models_dir, max_loaded_models and [models.*].
func (c *Config) validateModels() []error {
	var errs []error
	if c.MaxLoadedModels < 0 {
		errs = append(errs, fmt.Errorf("max_loaded_models %d: want 0 (3) or more", c.MaxLoadedModels))
	}
	for name, e := range c.Models {
		if e.Path == "" {
			errs = append(errs, fmt.Errorf("models.%s.path: a model file is required", name))
		}
		if e.KVTokens < 0 || e.Context < 0 {
			errs = append(errs, fmt.Errorf("models.%s: kv_tokens %d and context %d: want 0 or more", name, e.KVTokens, e.Context))
		}
		if _, err := toolcall.ParseFormat(e.ToolFormat); err != nil {
			errs = append(errs, fmt.Errorf("models.%s.tool_format: %w", name, err))
		}
		if err := checkDraft(e.Speculative, e.DraftModel); err != nil {
			errs = append(errs, fmt.Errorf("models.%s: %w", name, err))
		}
		if _, err := backend.ParseKV(e.KVCacheType, e.KVCacheTypeK, e.KVCacheTypeV); err != nil {
			errs = append(errs, fmt.Errorf("models.%s.kv_cache_type: %w", name, err))
		}
		if e.DraftTokens < 0 || e.DraftTokens > 32 || e.NumSpeculativeTokens < 0 || e.NumSpeculativeTokens > 32 {
			errs = append(errs, fmt.Errorf("models.%s: draft_tokens %d, num_speculative_tokens %d: want 0 to 32", name, e.DraftTokens, e.NumSpeculativeTokens))
		}
	}
	if err := c.checkModelNames(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkModelNames checks that the default model is named once and that
// no [models.NAME] takes [model]'s name.
func (c *Config) checkModelNames() error {
	if c.Model.Path != "" && c.DefaultModel != "" {
		return fmt.Errorf("default_model %q: [model]'s file is the default; set one of them", c.DefaultModel)
	}
	if c.Model.Path == "" {
		return nil
	}
	for _, def := range []string{c.DefaultModelName(), ModelName(c.Model.Path)} {
		if _, ok := c.Models[def]; ok {
			return fmt.Errorf("models.%s: the name of [model]'s file (%s)", def, c.Model.Path)
		}
	}
	return nil
}
