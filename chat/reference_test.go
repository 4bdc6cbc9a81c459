package chat

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/batchd/batchd/testing/testmodels"
)

// refDate is the day the reference renders fixed strftime_now to.
var refDate = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

type conversationFile struct {
	Name     string          `json:"name"`
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
	Vars     json.RawMessage `json:"vars"` // template variables (chat_template_kwargs)
}

func loadConversations(t *testing.T, dir string) map[string]conversationFile {
	t.Helper()
	var convs []conversationFile
	readJSON(t, filepath.Join(dir, "conversations.json"), &convs)
	out := map[string]conversationFile{}
	for _, c := range convs {
		out[c.Name] = c
	}
	return out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// reference is one render of the shared references: a template, a
// conversation, and what Hugging Face's renderer gave (or that it raised).
type reference struct {
	Template            string `json:"template"`
	Conversation        string `json:"conversation"`
	AddGenerationPrompt bool   `json:"add_generation_prompt"`
	BOS                 string `json:"bos_token"`
	EOS                 string `json:"eos_token"`
	Rendered            string `json:"rendered"`
	Error               string `json:"error"`
}

// eachReference calls f for every shared reference render with its
// compiled template and the Input that renders it.
func eachReference(t *testing.T, f func(r reference, tmpl *Template, in Input)) {
	dir := filepath.Join(testmodels.Dir(t), "chat")
	convs := loadConversations(t, dir)
	var renders []reference
	readJSON(t, filepath.Join(dir, "renders.json"), &renders)
	if len(renders) == 0 {
		t.Fatal("no renders")
	}
	compiled := map[string]*Template{}
	for _, r := range renders {
		tmpl := compiled[r.Template]
		if tmpl == nil {
			src, err := os.ReadFile(filepath.Join(dir, "templates", r.Template+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			if tmpl, err = Compile(r.Template, string(src)); err != nil {
				t.Fatal(err)
			}
			defer tmpl.Close()
			compiled[r.Template] = tmpl
		}
		c, ok := convs[r.Conversation]
		if !ok {
			t.Fatalf("conversation %q missing", r.Conversation)
		}
		f(r, tmpl, Input{Messages: c.Messages, Tools: c.Tools, AddGenerationPrompt: r.AddGenerationPrompt,
			BOS: r.BOS, EOS: r.EOS, Now: refDate})
	}
}

// TestRendersMatchHuggingFace: every template x conversation renders to
// the bytes Hugging Face's renderer gave, and raises where it raised.
func TestRendersMatchHuggingFace(t *testing.T) {
	eachReference(t, func(r reference, tmpl *Template, in Input) {
		got, err := tmpl.Render(context.Background(), in)
		name := r.Template + "/" + r.Conversation
		if r.Error != "" {
			var te *TemplateError
			if !errors.As(err, &te) || te.Compile {
				t.Errorf("%s: got %q, %v; want the template's error (%s)", name, got, err, r.Error)
			}
			return
		}
		if err != nil {
			t.Errorf("%s (generation prompt %v): %v", name, r.AddGenerationPrompt, err)
		} else if got != r.Rendered {
			t.Errorf("%s (generation prompt %v):\n got %q\nwant %q", name, r.AddGenerationPrompt, got, r.Rendered)
		}
	})
}
