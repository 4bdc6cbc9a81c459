package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/synth"
)

// modelWithTemplate writes a tiny model whose file carries src as its
// tokenizer.chat_template.
func modelWithTemplate(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "templated.gguf")
	llamacpp.Rewrite(t, synth.TinyFile(t, 256), path, map[string]any{"tokenizer.chat_template": src})
	return path
}

// TestModelTemplateThatFailsAtLoad: a model file whose template recurses
// without end killed the daemon at start (the template is test-rendered),
// a crash loop under systemd. Now the daemon serves prompts, health says
// why chat is off, and a chat request gets that reason. The render's time
// budget is raised so that only the stack budget can stop it: under the
// race detector on a loaded machine the recursion took over the default 2s
// to reach it, and the test failed on the time budget instead.
func TestModelTemplateThatFailsAtLoad(t *testing.T) {
	td := startDaemonFlags(t, "[model]\nchat_template_timeout = \"30s\"\n",
		ServeFlags{Model: modelWithTemplate(t, `{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`)})
	c := td.dial(t)
	ctx := context.Background()
	h, err := c.Health(ctx)
	if err != nil || h.Model == nil || h.Model.Chat != "" || !strings.Contains(h.Model.ChatError, "stack budget") {
		t.Fatalf("health: %+v %v, want chat off for its stack budget", h.Model, err)
	}
	if res, err := c.Generate(ctx, client.Request{Prompt: "a", MaxTokens: 2}, nil); err != nil || len(res.Tokens) == 0 {
		t.Fatalf("a plain prompt: %v", err)
	}
	_, err = c.Generate(ctx, client.Request{Messages: []client.Message{{Role: "user", Content: "hi"}}, MaxTokens: 2}, nil)
	if !errors.Is(err, wire.ErrInvalidArgument) || !strings.Contains(err.Error(), "stack budget") {
		t.Fatalf("a chat request: %v, want invalid_argument with the reason", err)
	}
}

// TestHostileTemplateBranchIsABadRequest: content that reaches a template's
// endless recursion or loop is a 400 for that request, quickly; it holds no
// slot of the user's cap afterwards (max_requests_per_user = 1 here), and
// the next chat request is served.
func TestHostileTemplateBranchIsABadRequest(t *testing.T) {
	src := `{% macro f() %}{{ f() }}{% endmacro %}{% for m in messages %}{% if m.content == 'boom' %}{{ f() }}{% endif %}` +
		`{% if m.content == 'spin' %}{% for i in range(65536) %}{% for j in range(65536) %}{% endfor %}{% endfor %}{% endif %}` +
		`{{ m.role }}: {{ m.content }}{% endfor %}`
	td := startDaemonFlags(t, "[server]\nmax_requests_per_user = 1\n[model]\nchat_template_timeout = \"1s\"\n",
		ServeFlags{Model: modelWithTemplate(t, src)})
	c := td.dial(t)
	chat := func(ctx context.Context, content string) error {
		_, err := c.Generate(ctx, client.Request{Messages: []client.Message{{Role: "user", Content: content}}, MaxTokens: 2}, nil)
		return err
	}
	for _, content := range []string{"boom", "spin"} {
		start := time.Now()
		err := chat(context.Background(), content)
		if !errors.Is(err, wire.ErrInvalidArgument) {
			t.Fatalf("%s: %v, want invalid_argument", content, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s took %v", content, took)
		}
		if err := chat(context.Background(), "hello"); err != nil {
			t.Fatalf("after %s: %v", content, err)
		}
	}
	// A client that gives up stops the render (and frees its slot) at once.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := chat(ctx, "spin"); err == nil {
		t.Fatal("a spinning render outlived its client's deadline")
	}
	if err := chat(context.Background(), "hello"); err != nil {
		t.Fatalf("after a cancelled render: %v", err)
	}
}
