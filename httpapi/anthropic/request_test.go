package anthropic

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConversation: content blocks become OpenAI-style messages: the
// system first, a user turn's tool results before its text, an assistant
// turn's thinking as reasoning_content and tool_use as tool_calls; other
// blocks are refused by position and type.
func TestConversation(t *testing.T) {
	var r request
	body := `{"model": "m", "max_tokens": 9, "system": [{"type": "text", "text": "Be kind."}], "messages": [
		{"role": "user", "content": "Weather?"},
		{"role": "assistant", "content": [{"type": "thinking", "thinking": "Use the tool."}, {"type": "redacted_thinking", "data": "x"},
			{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}}]},
		{"role": "user", "content": [{"type": "text", "text": "Thanks"}, {"type": "tool_result", "tool_use_id": "toolu_1",
			"content": [{"type": "text", "text": "-3C"}]}]}]}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	s, msg := r.submit(false)
	if msg != "" {
		t.Fatal(msg)
	}
	want := `[{"content":"Be kind.","role":"system"},{"content":"Weather?","role":"user"},` +
		`{"content":"Checking.","reasoning_content":"Use the tool.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\": \"Oslo\"}","name":"w"},"id":"toolu_1","type":"function"}]},` +
		`{"content":"-3C","role":"tool","tool_call_id":"toolu_1"},{"content":"Thanks","role":"user"}]`
	if string(s.Messages) != want {
		t.Errorf("messages\n got %s\nwant %s", s.Messages, want)
	}
	if s.MaxTokens != 9 || string(s.TemplateKwargs) != `{"enable_thinking": false}` {
		t.Errorf("submit %+v", s)
	}
	for _, bad := range []struct{ body, want string }{
		{`{"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": [{"type": "document"}]}]}`, `messages[0].content[0]: a "document" block`},
		{`{"model": "m", "max_tokens": 9, "messages": [{"role": "system", "content": "x"}]}`, `messages[0].role "system"`},
		{`{"model": "m", "messages": [{"role": "user", "content": "x"}]}`, "max_tokens: required"},
		{`{"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "any"}}`, "tool_choice: no tools"},
	} {
		var r request
		if err := json.Unmarshal([]byte(bad.body), &r); err != nil {
			t.Fatal(err)
		}
		if _, msg := r.submit(false); !strings.Contains(msg, bad.want) {
			t.Errorf("%s: %q, want %q", bad.body, msg, bad.want)
		}
	}
}
