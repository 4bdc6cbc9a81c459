package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestRendersMatchJinja2: conversations beyond the reference set (tool
// calls and results, quotes, tabs, emoji, empty turns) render as Python's
// jinja2 renders them under Hugging Face's settings, for every template.
// It needs python3 with jinja2 (Debian's python3-jinja2; .ci/run installs it).
func TestRendersMatchJinja2(t *testing.T) {
	if exec.Command("python3", "-c", "import jinja2").Run() != nil {
		t.Skip("python3 with jinja2 not found: apt-get install python3-jinja2")
	}
	dir := filepath.Join(testmodels.Dir(t), "chat", "templates")
	convsJSON, err := os.ReadFile("testdata/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var convs []conversationFile
	if err := json.Unmarshal(convsJSON, &convs); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if len(paths) == 0 {
		t.Fatal("no templates")
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		bos, eos := "<s>", "</s>"
		req, _ := json.Marshal(map[string]any{"template": string(src), "conversations": json.RawMessage(convsJSON), "bos": bos, "eos": eos})
		cmd := exec.Command("python3", "testdata/render_jinja2.py")
		cmd.Stdin = bytes.NewReader(req)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: python: %v", path, err)
		}
		var want []struct{ Rendered, Error string }
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatal(err)
		}
		tmpl, err := Compile(filepath.Base(path), string(src))
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			c := convs[i/2]
			got, err := tmpl.Render(context.Background(), Input{Messages: c.Messages, Tools: c.Tools, AddGenerationPrompt: i%2 == 0, BOS: bos, EOS: eos, Now: refDate})
			name := filepath.Base(path) + "/" + c.Name
			var te *TemplateError
			switch {
			case w.Error != "":
				if !errors.As(err, &te) {
					t.Errorf("%s: got %q, %v; jinja2 raised %s", name, got, err, w.Error)
				}
			case err != nil:
				t.Errorf("%s (generation prompt %v): %v", name, i%2 == 0, err)
			case got != w.Rendered:
				t.Errorf("%s (generation prompt %v):\n got %q\nwant %q", name, i%2 == 0, got, w.Rendered)
			}
		}
	}
}
