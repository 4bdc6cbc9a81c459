package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// codexMarker is what the pinned command prints.
const codexMarker = "batchd-codex-roundtrip"

// codexSteer is the test's fake in the middle: a tiny random model does
// no useful work, so the first request of a turn is steered to call
// Codex's shell tool (exec_command) with one harmless command, pinned by
// its schema, and the request that brings the command's output back is
// steered to answer in a few words. Everything else passes as Codex sent it; the
// requests are kept for the test to read.
type codexSteer struct {
	mu   sync.Mutex
	seen []map[string]any
}

func (c *codexSteer) rewrite(body []byte) []byte {
	var req map[string]any
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	c.mu.Lock()
	c.seen = append(c.seen, req)
	c.mu.Unlock()
	items, _ := req["input"].([]any)
	answered := false
	for _, it := range items {
		if m, _ := it.(map[string]any); m["type"] == "function_call_output" {
			answered = true
		}
	}
	if answered { // a short answer the grammar ends (a random model would not stop)
		req["tool_choice"], req["text"] = "none", map[string]any{"format": map[string]any{"type": "json_schema", "name": "done", "strict": true,
			"schema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]string{"type": "boolean"}},
				"required": []string{"ok"}, "additionalProperties": false}}}
	} else {
		for _, t := range req["tools"].([]any) {
			if m, _ := t.(map[string]any); m["name"] == "exec_command" {
				m["parameters"] = map[string]any{"type": "object", "required": []string{"cmd"}, "additionalProperties": false,
					"properties": map[string]any{"cmd": map[string]any{"type": "string", "enum": []string{"echo " + codexMarker}}}}
			}
		}
		req["tool_choice"], req["parallel_tool_calls"] = map[string]string{"type": "function", "name": "exec_command"}, false
	}
	out, _ := json.Marshal(req)
	return out
}

// TestCodexExec: OpenAI's Codex CLI (@openai/codex, pinned in
// testing/npmclients/codex), run non-interactively (codex exec) with
// batchd as its model provider over loopback TCP with a key, completes a
// turn: its Responses request (namespace tools and all) is served, the
// call to its shell tool streams back and runs, and the next request,
// carrying the call and the command's output, is answered.
func TestCodexExec(t *testing.T) {
	dir, err := filepath.Abs("../testing/npmclients/codex")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "codex")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Codex CLI not installed: npm ci --prefix %s", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found (Codex's launcher is a Node.js script)")
	}
	addr := freePort(t)
	td := startQwenChat(t, tcpWithKey(addr, "key-codex-0123456789"))

	steer := &codexSteer{}
	target, _ := url.Parse("http://" + addr)
	proxy := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		if r.In.Method == http.MethodPost && strings.HasSuffix(r.In.URL.Path, "/responses") {
			body, _ := io.ReadAll(r.Out.Body)
			body = steer.rewrite(body)
			r.Out.Body, r.Out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			r.Out.Header.Del("Content-Encoding")
		}
	}}
	front := httptest.NewServer(proxy)
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	work := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access", "-m", "tiny-qwen2",
		"-c", "model_provider=batchd", "-c", `model_providers.batchd.name="batchd"`,
		"-c", fmt.Sprintf("model_providers.batchd.base_url=%q", front.URL+"/v1"), "-c", `model_providers.batchd.env_key="BATCHD_KEY"`,
		"-c", `model_providers.batchd.wire_api="responses"`, "-c", `web_search="disabled"`, "Print a word with echo.")
	cmd.Dir, cmd.Stdin = work, nil
	cmd.Env = append(os.Environ(), "CODEX_HOME="+t.TempDir(), "BATCHD_KEY=key-codex-0123456789", "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex exec: %v\n%s\n%s", err, out, stderr.String())
	}
	// Codex's JSON events: the command ran and printed the marker; the turn completed.
	ran, completed := false, false
	for _, line := range bytes.Split(out, []byte("\n")) {
		var ev struct {
			Type string
			Item struct {
				Type             string
				AggregatedOutput string `json:"aggregated_output"`
				ExitCode         *int   `json:"exit_code"`
			}
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "item.completed" && ev.Item.Type == "command_execution":
			ran = strings.Contains(ev.Item.AggregatedOutput, codexMarker) && ev.Item.ExitCode != nil && *ev.Item.ExitCode == 0
		case ev.Type == "turn.completed":
			completed = true
		}
	}
	if !ran || !completed {
		t.Errorf("codex exec: the command ran %v, the turn completed %v:\n%s\n%s", ran, completed, out, stderr.String())
	}
	// The request after the call carried it and its output back.
	steer.mu.Lock()
	defer steer.mu.Unlock()
	back := false
	for _, req := range steer.seen {
		calls := map[string]bool{}
		for _, it := range req["input"].([]any) {
			m, _ := it.(map[string]any)
			switch m["type"] {
			case "function_call":
				calls[fmt.Sprint(m["call_id"])] = m["name"] == "exec_command"
			case "function_call_output":
				if calls[fmt.Sprint(m["call_id"])] && strings.Contains(fmt.Sprint(m["output"]), codexMarker) {
					back = true
				}
			}
		}
	}
	if len(steer.seen) < 2 || !back {
		t.Errorf("%d requests; the call's output came back: %v", len(steer.seen), back)
	}
	td.waitIdle(t)
}
