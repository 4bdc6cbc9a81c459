package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batchd/batchd/config"

	"github.com/ollama/ollama/api"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/testmodels"
)

// modelsDir links models/arch files into a fresh models directory.
func modelsDir(t *testing.T, archs ...string) string {
	t.Helper()
	src := filepath.Join(testmodels.Dir(t), "arch")
	dir := t.TempDir()
	for _, a := range archs {
		if err := os.Symlink(filepath.Join(src, "tiny-"+a+".gguf"), filepath.Join(dir, a+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkGolden runs llama.cpp's first golden for arch on model name and
// compares the tokens up to the first near tie.
func checkGolden(ctx context.Context, c *client.Client, name, arch string, g testmodels.ArchGolden) error {
	res, err := c.Generate(ctx, client.Request{Model: name, Tokens: g.PromptTokens, MaxTokens: len(g.OutputTokens)}, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for i, tok := range g.OutputTokens {
		if g.NearTie(i) {
			break
		}
		if i >= len(res.Tokens) || res.Tokens[i] != tok {
			return fmt.Errorf("%s (%s): step %d: tokens %v, llama.cpp %v", name, arch, i, res.Tokens, g.OutputTokens)
		}
	}
	return nil
}

func goldenWithPrompt(t *testing.T, arch string) testmodels.ArchGolden {
	for _, g := range testmodels.ArchGoldens(t, arch) {
		if len(g.PromptTokens) > 1 {
			return g
		}
	}
	t.Fatalf("no golden with a prompt for %s", arch)
	return testmodels.ArchGolden{}
}

func modelStates(t *testing.T, c *client.Client) map[string]wire.ModelEntry {
	t.Helper()
	list, err := c.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]wire.ModelEntry{}
	for _, m := range list {
		out[m.Name] = m
	}
	return out
}

// TestModelsLoadOnDemand: beside the default model (stories260K), two
// models from models_dir serve concurrent requests with llama.cpp's greedy
// tokens; a third model's request (max_loaded_models 3, the default
// pinned) evicts the least recently used idle one, never the one with a
// request in flight, which runs to its end; a corrupt file is
// reported (list, error) while the others keep serving; an unknown name
// is not_found; keep_alive 0 unloads a model as its request ends.
func TestModelsLoadOnDemand(t *testing.T) {
	dir := modelsDir(t, "llama3", "qwen2", "mistral")
	if err := os.WriteFile(filepath.Join(dir, "broken.gguf"), []byte("GGUF not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	td := startDaemon(t, fmt.Sprintf("models_dir = %q\nmax_loaded_models = 3\n", dir))
	c := td.dial(t)
	ctx := context.Background()
	goldens := map[string]testmodels.ArchGolden{}
	for _, a := range []string{"llama3", "qwen2", "mistral"} {
		goldens[a] = goldenWithPrompt(t, a)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := []string{"llama3", "qwen2"}[i%2]
			errs <- checkGolden(ctx, c, a, a, goldens[a])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	st := modelStates(t, c)
	if st["llama3"].State != "loaded" || st["qwen2"].State != "loaded" || st["mistral"].State != "available" {
		t.Fatalf("after the load: %+v", st)
	}
	if st["stories260K"].State != "loaded" || !st["stories260K"].Default || st["stories260K"].KeepAlive != -1 {
		t.Errorf("the default model: %+v", st["stories260K"])
	}

	// qwen2 busy with a long request, llama3 idle (used longer ago):
	// mistral takes llama3's place, qwen2's request runs to its end.
	long := make(chan error, 1)
	go func() {
		res, err := c.Generate(ctx, client.Request{Model: "qwen2", Prompt: "a", MaxTokens: 200, IgnoreEOS: true}, nil)
		if err == nil && len(res.Tokens) != 200 {
			err = fmt.Errorf("the long request made %d tokens", len(res.Tokens))
		}
		long <- err
	}()
	for modelStates(t, c)["qwen2"].Requests == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := checkGolden(ctx, c, "mistral", "mistral", goldens["mistral"]); err != nil {
		t.Fatal(err)
	}
	if err := <-long; err != nil {
		t.Fatalf("qwen2's request while mistral loaded: %v", err)
	}
	st = modelStates(t, c)
	if st["mistral"].State != "loaded" || st["llama3"].State != "available" || st["qwen2"].State != "loaded" {
		t.Errorf("after mistral: llama3 %s qwen2 %s mistral %s, want llama3 evicted", st["llama3"].State, st["qwen2"].State, st["mistral"].State)
	}

	_, err := c.Generate(ctx, client.Request{Model: "broken", Prompt: "a", MaxTokens: 1}, nil)
	if !errors.Is(err, wire.ErrUnavailable) {
		t.Errorf("a corrupt model: %v, want unavailable", err)
	}
	if b := modelStates(t, c)["broken"]; b.State != "failed" || b.Error == "" {
		t.Errorf("the corrupt model listed as %+v", b)
	}
	if err := checkGolden(ctx, c, "qwen2", "qwen2", goldens["qwen2"]); err != nil {
		t.Errorf("after a failed load: %v", err)
	}
	if _, err := c.Generate(ctx, client.Request{Model: "nope", Prompt: "a", MaxTokens: 1}, nil); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("an unknown model: %v, want not_found", err)
	}
	if _, err := c.Generate(ctx, client.Request{Model: "qwen2", KeepAlive: "0", Prompt: "a", MaxTokens: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if s := modelStates(t, c)["qwen2"].State; s != "available" {
		t.Errorf("keep_alive 0: qwen2 %s after its request", s)
	}
	if _, err := c.Generate(ctx, client.Request{Model: "qwen2", KeepAlive: "soon", Prompt: "a", MaxTokens: 1}, nil); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Errorf("keep_alive soon: %v", err)
	}
	// Metrics carry each loaded model's name, and only those.
	fams, err := td.d.met.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "batchd:iteration_tokens_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			seen[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	for _, name := range []string{"llama3", "qwen2", "mistral"} {
		if seen[name] == 0 {
			t.Errorf("iteration_tokens_total by model: %v, want %s's", seen, name)
		}
	}
	if _, ok := seen["nope"]; ok {
		t.Error("a client's unknown model name became a label")
	}
	td.waitIdle(t)
}

// TestFillInTheMiddle: a prompt with a suffix becomes llama.cpp's infill
// prompt (FIM prefix, the prefix, FIM suffix, the suffix, FIM middle) on a
// vocabulary that has the tokens, through msgpack, /v1/completions and
// Ollama's generate; a vocabulary without them refuses it.
func TestFillInTheMiddle(t *testing.T) {
	model := filepath.Join(testmodels.Dir(t), "arch", "tiny-qwen2.gguf")
	td := startDaemonFlags(t, "", ServeFlags{Model: model, HTTPSocket: "http"})
	c := td.dial(t)
	ctx := context.Background()
	prefix, suffix := "def add(a, b):\n", "\n    return c\n"
	res, err := c.Generate(ctx, client.Request{Prompt: prefix, Suffix: suffix, MaxTokens: 3, IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := td.d.defaultModel().Model.Tokenizer
	pre, suf, mid, ok := tok.FIM()
	if !ok {
		t.Fatal("the Qwen vocabulary has no FIM tokens")
	}
	p := res.PromptTokens
	i := slices.Index(p, suf)
	if len(p) < 4 || p[0] != pre || p[len(p)-1] != mid || i < 2 || tok.Decode(-1, p[1:i]) != prefix || tok.Decode(-1, p[i+1:len(p)-1]) != suffix {
		t.Fatalf("infill prompt %v (pre %d suf %d mid %d)", p, pre, suf, mid)
	}
	if len(res.Tokens) != 3 {
		t.Errorf("%d tokens", len(res.Tokens))
	}
	hc := unixHTTPClient(td.d.cfg.Server.HTTPSocket)
	body := fmt.Sprintf(`{"prompt": %q, "suffix": %q, "max_tokens": 3, "temperature": 0}`, prefix, suffix)
	resp, err := hc.Post("http://batchd/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || out.Usage.PromptTokens != len(p) {
		t.Errorf("/v1/completions with suffix: %d, %d prompt tokens, want %d", resp.StatusCode, out.Usage.PromptTokens, len(p))
	}
	no := false
	var gen api.GenerateResponse
	if err := td.ollama(t).Generate(ctx, &api.GenerateRequest{Model: "tiny-qwen2", Prompt: prefix, Suffix: suffix, Stream: &no,
		Options: map[string]any{"num_predict": 3, "temperature": 0}}, func(r api.GenerateResponse) error { gen = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if gen.PromptEvalCount != len(p) {
		t.Errorf("Ollama generate with suffix: %d prompt tokens, want %d", gen.PromptEvalCount, len(p))
	}
	plain := startDaemon(t, "") // stories260K: a llama2.c vocabulary without FIM tokens
	_, err = plain.dial(t).Generate(ctx, client.Request{Prompt: "a", Suffix: "b", MaxTokens: 1}, nil)
	if !errors.Is(err, wire.ErrInvalidArgument) || !strings.Contains(err.Error(), "fill-in-the-middle") {
		t.Errorf("suffix on a vocabulary without FIM tokens: %v", err)
	}
}

// TestModelsWithoutADefaultFile: a daemon with models_dir and no
// model.path starts with nothing loaded; default_model serves requests
// that name none, and loads on the first; without default_model such a
// request is not_found while named ones are served.
func TestModelsWithoutADefaultFile(t *testing.T) {
	dir := modelsDir(t, "qwen2", "llama3")
	start := func(cfg string) *testDaemon {
		return startDaemonFlags(t, fmt.Sprintf("models_dir = %q\n%s", dir, cfg), ServeFlags{HTTPSocket: "http"})
	}
	td := start("default_model = \"qwen2\"\n")
	c := td.dial(t)
	ctx := context.Background()
	if ps, err := c.Running(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("at start: %v %v, want nothing loaded", ps, err)
	}
	// Nothing loaded yet: the picker's scrape still names the model it will
	// serve and the block size (not model_name="" and block_size="0").
	resp, err := unixHTTPClient(td.d.cfg.Server.HTTPSocket).Get("http://batchd/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `vllm:cache_config_info{model_name="qwen2",block_size="16",cache_dtype="f16",num_gpu_blocks="0"} 1`) {
		t.Errorf("/metrics with nothing loaded:\n%s", b)
	}
	g := goldenWithPrompt(t, "qwen2")
	if err := checkGolden(ctx, c, "", "qwen2", g); err != nil {
		t.Fatal(err)
	}
	if st := modelStates(t, c); st["qwen2"].State != "loaded" || !st["qwen2"].Default {
		t.Errorf("after a request without a model: %+v", st["qwen2"])
	}
	if h, err := c.Health(ctx); err != nil || h.State != "ready" {
		t.Errorf("health %+v %v", h, err)
	}
	td2 := start("")
	c2 := td2.dial(t)
	if _, err := c2.Generate(ctx, client.Request{Prompt: "a", MaxTokens: 1}, nil); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("no model named, no default: %v", err)
	}
	if err := checkGolden(ctx, c2, "llama3", "llama3", goldenWithPrompt(t, "llama3")); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"default_model = \"nope\"\n"} {
		d := &Daemon{getenv: func(string) string { return "" }, ready: make(chan struct{})}
		d.flags = ServeFlags{Socket: filepath.Join(t.TempDir(), "b.sock"), Config: filepath.Join(t.TempDir(), "c.toml")}
		if err := os.WriteFile(d.flags.Config, []byte(fmt.Sprintf("models_dir = %q\n%s", dir, bad)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := d.loadConfig()
		if err == nil {
			err = d.Run(ctx, cfg, &syncBuffer{})
		}
		if err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("%s: %v, want a start error naming it", bad, err)
		}
	}
}

// TestConfiguredModels: a [models.NAME] table names a file anywhere, with
// aliases (Ollama-style tags), its own keep_alive, preload and context: it
// is loaded at start and kept, requests fit in its context, and its aliases
// reach it over HTTP.
func TestConfiguredModels(t *testing.T) {
	path := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	cfg := fmt.Sprintf("[models.chat]\npath = %q\naliases = [\"llama3.2:3b\"]\nkeep_alive = -1\npreload = true\ncontext = 40\n", path)
	td := startDaemonFlags(t, cfg, ServeFlags{HTTPSocket: "http"})
	c := td.dial(t)
	deadline := time.Now().Add(20 * time.Second)
	for modelStates(t, c)["chat"].State != "loaded" {
		if time.Now().After(deadline) {
			t.Fatalf("preload: %+v", modelStates(t, c))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m := modelStates(t, c)["chat"]; m.KeepAlive != -1 || len(m.Aliases) != 1 || !m.Default {
		t.Errorf("chat: %+v (the only model is the default)", m)
	}
	// context caps a request's prompt plus output.
	res, err := c.Generate(context.Background(), client.Request{Model: "chat", Prompt: "Hello", MaxTokens: 100, IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.PromptTokens) + len(res.Tokens); n != 40 || res.FinishReason != "length" {
		t.Errorf("context 40: %d tokens in all (%s)", n, res.FinishReason)
	}
	long := strings.Repeat("hello ", 60)
	if _, err := c.Generate(context.Background(), client.Request{Model: "chat", Prompt: long, MaxTokens: 1}, nil); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Errorf("a prompt over the model's context: %v", err)
	}
	hc := unixHTTPClient(td.d.cfg.Server.HTTPSocket)
	body := `{"model": "llama3.2:3b", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}`
	resp, err := hc.Post("http://batchd/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || out.Model != "llama3.2:3b" {
		t.Errorf("by alias: %d, model %q", resp.StatusCode, out.Model)
	}
	resp, err = hc.Post("http://batchd/v1/chat/completions", "application/json",
		strings.NewReader(`{"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Error struct {
			Code, Param string
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 404 || e.Error.Code != "model_not_found" || e.Error.Param != "model" {
		t.Errorf("an unknown model over HTTP: %d %+v", resp.StatusCode, e)
	}
}

// TestConfiguredDraftModel: a [models.NAME] table's draft_model and
// num_speculative_tokens turn on draft-model speculation for that model
// only (the model as its own draft here: every draft kept), and its
// output is the plain model's; a draft model with another method is
// refused by name.
func TestConfiguredDraftModel(t *testing.T) {
	path := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	cfg := fmt.Sprintf("[models.plain]\npath = %q\npreload = true\n[models.drafted]\npath = %q\npreload = true\n"+
		"draft_model = %q\nnum_speculative_tokens = 3\n", path, path, path)
	td := startDaemonFlags(t, cfg, ServeFlags{})
	c := td.dial(t)
	var outs [2][]int
	for i, name := range []string{"plain", "drafted"} {
		res, err := c.Generate(context.Background(), client.Request{Model: name, Prompt: "Hello there", MaxTokens: 24, IgnoreEOS: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = res.Tokens
	}
	if !slices.Equal(outs[0], outs[1]) || len(outs[0]) != 24 {
		t.Errorf("with a draft model %v, without %v", outs[1], outs[0])
	}
	seen := 0
	for _, rt := range td.d.loaded() {
		st := rt.Engine.Stats()
		seen++
		switch {
		case rt.Name == "plain" && st.SpecDrafted != 0:
			t.Errorf("plain drafted %d tokens", st.SpecDrafted)
		case rt.Name == "drafted" && (st.SpecDrafted == 0 || st.SpecAccepted != st.SpecDrafted):
			t.Errorf("drafted: %d of %d drafts kept, want all and some", st.SpecAccepted, st.SpecDrafted)
		}
	}
	if seen != 2 {
		t.Errorf("%d models loaded, want 2", seen)
	}
	c2 := config.Default()
	c2.Models = map[string]config.ModelEntry{"x": {Path: path, Speculative: "ngram", DraftModel: path}}
	if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), "models.x") || !strings.Contains(err.Error(), "draft") {
		t.Errorf("ngram with a draft model: %v", err)
	}
}
