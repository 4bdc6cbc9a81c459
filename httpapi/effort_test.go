package httpapi

import (
	"fmt"
	"strings"
	"testing"
)

// TestReasoningEffort: reasoning_effort becomes the template's
// reasoning_effort (over chat_template_kwargs' own), "none" turns thinking
// off, and an unknown level is a 400 naming the field.
func TestReasoningEffort(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	for i, c := range []struct{ body, kwargs string }{
		{`"reasoning_effort":"high"`, `{"reasoning_effort":"high"}`},
		{`"reasoning_effort":"low","chat_template_kwargs":{"reasoning_effort":"high","x":1}`, `{"reasoning_effort":"low","x":1}`},
		{`"reasoning_effort":"none","chat_template_kwargs":{"reasoning_effort":"high"}`, `{"enable_thinking":false}`},
	} {
		resp, _ := post(t, base+"/v1/chat/completions", testKey, `{"messages":[{"role":"user","content":"hi"}],`+c.body+`}`)
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		if got := string(submitsOf(b)[i].TemplateKwargs); got != c.kwargs {
			t.Errorf("%s: kwargs %s, want %s", c.body, got, c.kwargs)
		}
	}
	resp, body := post(t, base+"/v1/chat/completions", testKey, `{"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"extreme"}`)
	if resp.StatusCode != 400 || !strings.Contains(fmt.Sprint(body), "reasoning_effort") {
		t.Errorf("reasoning_effort extreme: %s %s", resp.Status, body)
	}
}
