package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/batchd/batchd/testing/testmodels"
)

func (td *testDaemon) ollama(t *testing.T) *api.Client {
	t.Helper()
	base, _ := url.Parse("http://batchd")
	return api.NewClient(base, unixHTTPClient(td.d.cfg.Server.HTTPSocket))
}

func statusOfErr(err error) int {
	var se api.StatusError
	if errors.As(err, &se) {
		return se.StatusCode
	}
	return 0
}

// TestOllamaAPI drives Ollama's API with its official Go client: version,
// tags, show, ps, chat and generate streamed and not (greedy chat gives
// /v1/chat/completions' text), keep_alive 0 and -1, an unknown model
// (404), and refusals in Ollama's error shape.
func TestOllamaAPI(t *testing.T) {
	dir := modelsDir(t, "qwen2")
	model := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	td := startDaemonFlags(t, fmt.Sprintf("models_dir = %q\n", dir), ServeFlags{Model: model, HTTPSocket: "http"})
	c := td.ollama(t)
	ctx := context.Background()
	if err := c.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Version(ctx); err != nil || v == "" {
		t.Fatalf("version %q %v", v, err)
	}
	tags, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range tags.Models {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "qwen2:latest,tiny-llama3:latest" {
		t.Fatalf("tags: %v", names)
	}

	oc := td.openai(t)
	page, err := oc.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "qwen2,tiny-llama3" {
		t.Errorf("/v1/models: %v, want every model", ids)
	}

	// Greedy chat: the same text as the OpenAI API's.
	msgs := []api.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello there"}}
	opts := map[string]any{"temperature": 0, "num_predict": 10}
	no, yes := false, true
	var whole api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-llama3", Messages: msgs, Stream: &no, Options: opts},
		func(r api.ChatResponse) error { whole = r; return nil }); err != nil {
		t.Fatal(err)
	}
	oa, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny-llama3",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello there")},
		MaxTokens: openai.Int(10), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if !whole.Done || whole.Message.Content != oa.Choices[0].Message.Content || whole.EvalCount != int(oa.Usage.CompletionTokens) ||
		whole.PromptEvalCount != int(oa.Usage.PromptTokens) || whole.DoneReason == "" || whole.TotalDuration <= 0 {
		t.Fatalf("/api/chat %+v\n/v1/chat/completions %q", whole, oa.Choices[0].Message.Content)
	}
	var streamed strings.Builder
	var last api.ChatResponse
	chunks := 0
	if err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-llama3", Messages: msgs, Stream: &yes, Options: opts},
		func(r api.ChatResponse) error {
			streamed.WriteString(r.Message.Content)
			last = r
			chunks++
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	if streamed.String() != whole.Message.Content || !last.Done || chunks < 2 || last.EvalCount != whole.EvalCount {
		t.Errorf("streamed %q in %d chunks (last %+v), whole %q", streamed.String(), chunks, last, whole.Message.Content)
	}

	// Generate on the directory's model, streamed and not; keep_alive -1
	// keeps it (each request sets it, as Ollama's), 0 unloads it after.
	forever := &api.Duration{Duration: -1}
	var gen api.GenerateResponse
	if err := c.Generate(ctx, &api.GenerateRequest{Model: "qwen2", Prompt: "Once upon", Raw: true, Stream: &no,
		Options: opts, KeepAlive: forever}, func(r api.GenerateResponse) error { gen = r; return nil }); err != nil {
		t.Fatal(err)
	}
	var genStream strings.Builder
	if err := c.Generate(ctx, &api.GenerateRequest{Model: "qwen2:latest", Prompt: "Once upon", Raw: true, Options: opts, KeepAlive: forever},
		func(r api.GenerateResponse) error { genStream.WriteString(r.Response); return nil }); err != nil {
		t.Fatal(err)
	}
	if gen.Response == "" || !gen.Done || genStream.String() != gen.Response || len(gen.Context) == 0 {
		t.Errorf("generate %+v, streamed %q", gen, genStream.String())
	}
	ps, err := c.ListRunning(ctx)
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]api.ProcessModelResponse{}
	for _, m := range ps.Models {
		running[m.Name] = m
	}
	if q, ok := running["qwen2:latest"]; !ok || q.ExpiresAt.Before(time.Now().Add(24*time.Hour)) || q.Size == 0 {
		t.Errorf("ps: %+v, want qwen2 kept (keep_alive -1)", ps.Models)
	}
	zero := &api.Duration{Duration: 0}
	if err := c.Generate(ctx, &api.GenerateRequest{Model: "qwen2", KeepAlive: zero}, func(api.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if ps, _ = c.ListRunning(ctx); len(ps.Models) != 1 || ps.Models[0].Name != "tiny-llama3:latest" {
		t.Errorf("after keep_alive 0: %+v", ps.Models)
	}

	show, err := c.Show(ctx, &api.ShowRequest{Model: "tiny-llama3"})
	if err != nil || show.Details.Family == "" || len(show.Capabilities) == 0 {
		t.Errorf("show: %+v %v", show, err)
	}
	if _, err := c.Show(ctx, &api.ShowRequest{Model: "nope"}); statusOfErr(err) != 404 {
		t.Errorf("show nope: %v", err)
	}
	err = c.Chat(ctx, &api.ChatRequest{Model: "nope", Messages: msgs}, func(api.ChatResponse) error { return nil })
	if statusOfErr(err) != 404 || !strings.Contains(err.Error(), "nope") {
		t.Errorf("chat with an unknown model: %v", err)
	}
	for what, req := range map[string]*api.ChatRequest{
		"images":  {Model: "tiny-llama3", Messages: []api.Message{{Role: "user", Content: "x", Images: []api.ImageData{[]byte("png")}}}},
		"options": {Model: "tiny-llama3", Messages: msgs, Options: map[string]any{"mirostat": 2}},
		"format":  {Model: "tiny-llama3", Messages: msgs, Format: json.RawMessage(`"yaml"`)},
	} {
		err := c.Chat(ctx, req, func(api.ChatResponse) error { return nil })
		if statusOfErr(err) != 400 {
			t.Errorf("%s: %v, want a 400", what, err)
		}
	}
	if err := c.Pull(ctx, &api.PullRequest{Model: "llama3.2"}, func(api.ProgressResponse) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "models_dir") {
		t.Errorf("pull: %v, want how to add a model", err)
	}
	// An admin (this test runs as root) copies and deletes models_dir models.
	if err := c.Copy(ctx, &api.CopyRequest{Source: "qwen2", Destination: "qwen-copy:latest"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Generate(ctx, &api.GenerateRequest{Model: "qwen-copy", Prompt: "a", Raw: true, Options: opts},
		func(api.GenerateResponse) error { return nil }); err != nil {
		t.Errorf("generate on the copy: %v", err)
	}
	if err := c.Delete(ctx, &api.DeleteRequest{Model: "qwen-copy"}); err != nil {
		t.Fatal(err)
	}
	if tags, _ = c.List(ctx); len(tags.Models) != 2 {
		t.Errorf("after delete: %+v", tags.Models)
	}
	if err := c.Delete(ctx, &api.DeleteRequest{Model: "tiny-llama3"}); statusOfErr(err) != 400 {
		t.Errorf("deleting the configured default model: %v, want 400", err)
	}
	// num_ctx caps prompt plus output.
	var capped api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-llama3", Messages: msgs, Stream: &no,
		Options: map[string]any{"temperature": 0, "num_ctx": whole.PromptEvalCount + 3}},
		func(r api.ChatResponse) error { capped = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if capped.EvalCount > 3 || capped.EvalCount == 3 && capped.DoneReason != "length" {
		t.Errorf("num_ctx %d: %d tokens (%s)", whole.PromptEvalCount+3, capped.EvalCount, capped.DoneReason)
	}
	err = c.Chat(ctx, &api.ChatRequest{Model: "tiny-llama3", Messages: msgs, Options: map[string]any{"num_ctx": 4}},
		func(api.ChatResponse) error { return nil })
	if statusOfErr(err) != 400 || !strings.Contains(err.Error(), "num_ctx") {
		t.Errorf("a prompt over num_ctx: %v", err)
	}
	// A JSON schema as format holds the answer to it.
	var js api.ChatResponse
	schema := json.RawMessage(`{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}`)
	if err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-llama3", Messages: msgs, Stream: &no, Format: schema,
		Options: map[string]any{"temperature": 0, "num_predict": 40}}, func(r api.ChatResponse) error { js = r; return nil }); err != nil {
		t.Fatal(err)
	}
	var obj struct {
		A *int `json:"a"`
	}
	if err := json.Unmarshal([]byte(js.Message.Content), &obj); err != nil && js.DoneReason != "length" || err == nil && obj.A == nil {
		t.Errorf("format schema: %q (%s): %v", js.Message.Content, js.DoneReason, err)
	}
	td.waitIdle(t)
}
