package ollama

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/batchd/batchd/httpapi"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/ipctest"
	"github.com/batchd/batchd/ipc/wire"
)

// newBackend answers every submit with "Hi" (finish stop), or with one
// tool call when the request has tools, and records the submits.
func newBackend() ipctest.Models {
	return ipctest.Models{Backend: &ipctest.Backend{Text: func(*wire.Submit) []string { return []string{"Hi"} }, Finish: "stop",
		Prompt: []int{1}, Calls: []wire.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		List: []wire.ModelEntry{{Name: "m", State: "loaded", Path: "/nonexistent/m.gguf"}}}
}

func submitsOf(b ipctest.Models) []*wire.Submit { s, _ := b.Submits(); return s }

func serve(t *testing.T, b ipctest.Models) string {
	t.Helper()
	srv := httpapi.New(httpapi.Options{Backend: b, Users: &ipctest.Users{}, Model: "m", Anonymous: &ipc.Peer{UID: 1}})
	Register(srv, b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestToolCallsAndHistory: a call comes back as Ollama writes it (the
// arguments an object, done_reason stop); a history's calls and tool
// results reach the submit in OpenAI's shape (arguments as JSON text).
func TestToolCallsAndHistory(t *testing.T) {
	b := newBackend()
	base := serve(t, b)
	tools := `[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]`
	status, resp := post(t, base+"/api/chat", `{"model": "m", "stream": false, "tools": `+tools+`,
		"messages": [{"role": "user", "content": "Paris?"},
			{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
			{"role": "tool", "content": "rain", "tool_name": "get_weather"}]}`)
	if status != 200 {
		t.Fatalf("status %d %v", status, resp)
	}
	msg := resp["message"].(map[string]any)
	calls, _ := msg["tool_calls"].([]any)
	if len(calls) != 1 || resp["done_reason"] != "stop" {
		t.Fatalf("response %v", resp)
	}
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "get_weather" || fn["arguments"].(map[string]any)["city"] != "Paris" {
		t.Errorf("call %v, want arguments as an object", fn)
	}
	var hist []map[string]any
	if err := json.Unmarshal(submitsOf(b)[0].Messages, &hist); err != nil {
		t.Fatal(err)
	}
	call := hist[1]["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
	var args map[string]string
	if s, _ := call["arguments"].(string); json.Unmarshal([]byte(s), &args) != nil || args["city"] != "Oslo" ||
		hist[2]["role"] != "tool" || hist[2]["name"] != "get_weather" {
		t.Errorf("history as submitted: %v", hist)
	}
	if string(submitsOf(b)[0].Tools) == "" {
		t.Error("tools did not reach the submit")
	}
}

// TestOptionsAndRefusals: options map to the submit (Ollama's defaults
// where absent); what batchd cannot honour is a 400 in Ollama's shape.
func TestOptionsAndRefusals(t *testing.T) {
	b := newBackend()
	base := serve(t, b)
	status, _ := post(t, base+"/api/generate", `{"model": "m", "prompt": "x", "stream": false,
		"options": {"num_predict": 5, "temperature": 0.5, "top_k": 7, "seed": 3, "stop": ["\n"], "num_thread": 4}}`)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	s := submitsOf(b)[0]
	if s.MaxTokens != 5 || s.Temperature != 0.5 || s.TopK != 7 || s.TopP != 0.9 || s.Seed != 3 || len(s.Stop) != 1 {
		t.Errorf("submit %+v", s)
	}
	for _, body := range []string{
		`{"model": "m", "prompt": "x", "options": {"mirostat": 1}}`,
		`{"model": "m", "prompt": "x", "options": {"typical_p": 0.5}}`,
		`{"model": "m", "prompt": "x", "options": {"temperature": "hot"}}`,
		`{"model": "m", "prompt": "x", "images": ["aGk="]}`,
		`{"model": "m", "prompt": "x", "format": "yaml"}`,
		`{"model": "m", "prompt": "x", "think": "maybe"}`,
		`{"model": "m", "prompt": "x", "template": "{{ .Prompt }}"}`,
		`{"model": "m", "prompt": "x", "logprobs": true}`,
		`{"model": "m", "prompt": "x", "keep_alive": {}}`,
		`{"prompt": "x"}`,
		`{"model": "m", "prompt": "x"`,
	} {
		status, resp := post(t, base+"/api/generate", body)
		if status != 400 || resp["error"] == nil {
			t.Errorf("%s: %d %v, want a 400 with an error", body, status, resp)
		}
	}
	if status, resp := post(t, base+"/api/pull", `{"model": "llama3.2"}`); status != 400 || !strings.Contains(resp["error"].(string), "models_dir") {
		t.Errorf("pull: %d %v", status, resp)
	}
	if status, resp := post(t, base+"/api/embed", `{"model": "m", "input": 5}`); status != 400 || resp["error"] == nil {
		t.Errorf("embed of a number: %d %v", status, resp)
	}
	resp, err := http.Get(base + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodHead, base+"/", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD /: %v %v", resp, err)
	}
}
