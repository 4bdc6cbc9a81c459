package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/testmodels"
)

func toolRefs(t *testing.T) []testmodels.ToolCase { return testmodels.ToolCases(t) }

// TestToolCallsMatchLlamaCpp serves each tool-calling reference through
// the daemon: the conversation and tools render to llama.cpp's prompt
// tokens (the calls and results in the history too, polyfills where the
// template lacks them), the greedy tokens are llama.cpp's, and the answer
// is llama.cpp's content and calls; streamed, the deltas add up to it.
// llama.cpp read the *-named cases as auto, and tiny-qwen2's own template
// failed to parse there (it used chatml): both are served as llama.cpp did.
func TestToolCallsMatchLlamaCpp(t *testing.T) {
	dir := testmodels.Dir(t)
	daemons := map[string]*testDaemon{}
	for _, ref := range toolRefs(t) {
		if ref.ChatFormat == "Content-only" {
			continue
		}
		tmpl := filepath.Join(dir, "chat", "templates", ref.ChatTemplate)
		switch {
		case ref.Model == "tiny-qwen2.gguf" && strings.HasPrefix(ref.ChatTemplate, "embedded"):
			tmpl = "chatml"
		case strings.HasPrefix(ref.ChatTemplate, "embedded"):
			tmpl = ""
		}
		key := ref.Model + "|" + tmpl
		td := daemons[key]
		if td == nil {
			cfg := "[engine]\nkv_cache_type = \"f32\"\n"
			if tmpl != "" {
				cfg += fmt.Sprintf("[model]\nchat_template = %q\n", tmpl)
			}
			td = startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(dir, "arch", ref.Model)})
			daemons[key] = td
		}
		t.Run(ref.ID, func(t *testing.T) {
			choice := strings.Trim(string(ref.Request.ToolChoice), `"`)
			if strings.HasPrefix(choice, "{") {
				choice = "auto"
			}
			var msgs []client.Message
			if err := json.Unmarshal(ref.Request.Messages, &msgs); err != nil {
				t.Fatal(err)
			}
			req := client.Request{Messages: msgs, Tools: ref.Request.Tools, ToolChoice: choice,
				NoParallelToolCalls: true, MaxTokens: 128, Temperature: 0, TopK: 1}
			c := td.dial(t)
			res, err := c.Generate(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.PromptTokens, ref.PromptTokens) {
				t.Fatalf("prompt tokens differ from llama.cpp's\n got %v\nwant %v", res.PromptTokens, ref.PromptTokens)
			}
			if !slices.Equal(res.Tokens, ref.OutputTokens) {
				t.Fatalf("tokens differ from llama.cpp's\n got %v\nwant %v", res.Tokens, ref.OutputTokens)
			}
			want := ref.Response.Choices[0]
			wantContent := ""
			if want.Message.Content != nil {
				wantContent = *want.Message.Content
			}
			if res.Text != wantContent || res.FinishReason != want.FinishReason || len(res.ToolCalls) != len(want.Message.ToolCalls) {
				t.Fatalf("answer %q %s %v, llama.cpp %q %s %+v", res.Text, res.FinishReason, res.ToolCalls, wantContent,
					want.FinishReason, want.Message.ToolCalls)
			}
			for i, w := range want.Message.ToolCalls {
				g := res.ToolCalls[i]
				if g.Name != w.Function.Name || g.Arguments != w.Function.Arguments || (w.ID != "" && g.ID != w.ID) || g.ID == "" {
					t.Errorf("call %d: %+v, llama.cpp %+v", i, g, w)
				}
			}
			streamed := streamAnswer(t, c, req)
			if streamed.Text != res.Text || !sameCalls(streamed.ToolCalls, res.ToolCalls) {
				t.Errorf("streamed %q %v, whole %q %v", streamed.Text, streamed.ToolCalls, res.Text, res.ToolCalls)
			}
		})
	}
}

// streamAnswer streams req and puts its deltas together.
func streamAnswer(t *testing.T, c *client.Client, req client.Request) *client.Result {
	t.Helper()
	var text, reasoning strings.Builder
	var calls []struct{ ID, Name, Arguments string }
	res, err := c.Generate(context.Background(), req, func(d client.Delta) error {
		text.WriteString(d.Text)
		reasoning.WriteString(d.Reasoning)
		for _, tc := range d.ToolCalls {
			if tc.Index == len(calls) {
				calls = append(calls, struct{ ID, Name, Arguments string }{tc.ID, tc.Name, ""})
			}
			calls[tc.Index].Arguments += tc.Arguments
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != len(res.ToolCalls) {
		t.Fatalf("%d calls streamed, %d in the done frame", len(calls), len(res.ToolCalls))
	}
	for i, c := range calls {
		if d := res.ToolCalls[i]; c.ID != d.ID || c.Name != d.Name || c.Arguments != d.Arguments {
			t.Fatalf("streamed call %d %+v, done frame %+v", i, c, d)
		}
	}
	res.Text, res.Reasoning = text.String(), reasoning.String()
	return res
}

// sameCalls compares calls by name and arguments (ids are drawn anew).
func sameCalls(a, b []wire.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Arguments != b[i].Arguments {
			return false
		}
	}
	return true
}
