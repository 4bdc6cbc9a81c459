package chat

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRenderRejectsMalformedConversations(t *testing.T) {
	tmpl, _, err := Builtin("chatml")
	if err != nil {
		t.Fatal(err)
	}
	for _, msgs := range []string{
		``, `{}`, `[]`, `[1]`, `[{"content": "x"}]`, `[{"role": 3}]`, `[{"role": "user", "content": 5}]`,
		`[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]`,
		`[{"role": "user", "content": [{"text": "x"}]}]`, `[{"role": "user"}] x`,
		`[` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 101),
	} {
		if _, err := tmpl.Render(context.Background(), Input{Messages: []byte(msgs)}); !errors.Is(err, ErrInvalidMessages) {
			t.Errorf("%.40s: got %v, want ErrInvalidMessages", msgs, err)
		}
	}
	if _, err := tmpl.Render(context.Background(), Input{Messages: []byte(`[{"role":"user","content":"x"}]`), Tools: []byte(`{}`)}); !errors.Is(err, ErrInvalidMessages) {
		t.Errorf("tools as an object: %v", err)
	}
}

// TestContentParts: text parts are joined for a template that prints
// content as a string, and passed as a list to one that iterates them.
func TestContentParts(t *testing.T) {
	msgs := []byte(`[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]`)
	plain, _, _ := Builtin("chatml")
	if got, err := plain.Render(context.Background(), Input{Messages: msgs}); err != nil || got != "<|im_start|>user\na\nb<|im_end|>\n" {
		t.Errorf("string template: %q, %v", got, err)
	}
	typed, err := Compile("typed", `{% for m in messages %}{% for p in m.content %}[{{ p.text }}]{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	if !typed.pool.typed || plain.pool.typed {
		t.Fatalf("typed content detection: %v %v", typed.pool.typed, plain.pool.typed)
	}
	if got, err := typed.Render(context.Background(), Input{Messages: msgs}); err != nil || got != "[a][b]" {
		t.Errorf("typed template: %q, %v", got, err)
	}
}

func TestTemplateErrors(t *testing.T) {
	if _, err := Compile("bad", `{% for x in %}`); err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Errorf("compile: %v", err)
	}
	tmpl, err := Compile("raises", `{{ raise_exception('System role not supported') }}`)
	if err != nil {
		t.Fatal(err)
	}
	var te *TemplateError
	_, err = tmpl.Render(context.Background(), Input{Messages: []byte(`[{"role":"user","content":"x"}]`)})
	if !errors.As(err, &te) || te.Compile || !strings.Contains(te.Problem, "System role not supported") {
		t.Errorf("raise: %v", err)
	}
	big, _ := Compile("range", `{% for i in range(100000000) %}{% endfor %}`)
	if _, err := big.Render(context.Background(), Input{Messages: []byte(`[{"role":"user","content":"x"}]`)}); !errors.As(err, &te) {
		t.Errorf("range(1e8): %v, want a template error", err)
	}
	date, _ := Compile("date", `{{ strftime_now('%d %b %Y, 100%% %q') }}`)
	if got, _ := date.Render(context.Background(), Input{Messages: []byte(`[{"role":"user","content":"x"}]`), Now: refDate}); got != "01 Dec 2026, 100% %q" {
		t.Errorf("strftime_now: %q", got)
	}
}

func TestBuiltinsRender(t *testing.T) {
	msgs := []byte(`[{"role":"system","content":"S"},{"role":"user","content":"U"},{"role":"assistant","content":"A"},{"role":"user","content":"V"}]`)
	for _, name := range BuiltinNames() {
		tmpl, ok, err := Builtin(name)
		if !ok || err != nil {
			t.Fatalf("%s: %v %v", name, ok, err)
		}
		got, err := tmpl.Render(context.Background(), Input{Messages: msgs, AddGenerationPrompt: true, BOS: "<s>", EOS: "</s>"})
		if err != nil || !strings.Contains(got, "S") || !strings.Contains(got, "V") {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, ok, _ := Builtin("nope"); ok {
		t.Error("unknown name found")
	}
}
