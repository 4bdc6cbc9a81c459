package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/testmodels"
)

const isolatedConfig = `[server]
http_listen = %q
[server.api_keys]
"1001" = "key-alice-0123456789"
"1002" = "key-bob-0123456789"
[channels.realtime]
isolated = %v
deadline = "10s"
[routing.tags]
banking = "realtime"
[[compliance]]
name = "banking"
tags = ["banking"]
channel = "realtime"
max_deadline = "30s"
isolated = true
`

// TestIsolatedChannelAndCompliance: two users with the same prompt in an
// isolated channel never hit each other's prefix-cache blocks (each hits
// its own); in a shared channel the second user hits the first's. A
// request whose tag a compliance rule binds to another channel is refused,
// and a reload that breaks a rule is rejected whole, the running config
// kept.
func TestIsolatedChannelAndCompliance(t *testing.T) {
	addr := freePort(t)
	model := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	td := startDaemonFlags(t, fmt.Sprintf(isolatedConfig, addr, true), ServeFlags{Model: model})
	prompt := strings.Repeat("The cache must not tell one user what another asked. ", 8)
	ask := func(key, channel string, tags ...string) (int, int) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 2, "channel": channel, "tags": tags})
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Usage struct {
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Usage.Details.Cached
	}
	for _, step := range []struct {
		who, key, channel string
		cached            bool
	}{
		{"alice, realtime", "key-alice-0123456789", "realtime", false},
		{"bob, realtime: not alice's blocks", "key-bob-0123456789", "realtime", false},
		{"alice again: her own", "key-alice-0123456789", "realtime", true},
		{"bob, standard", "key-bob-0123456789", "standard", false},
		{"alice, standard: bob's blocks, shared", "key-alice-0123456789", "standard", true},
	} {
		code, cached := ask(step.key, step.channel)
		if code != http.StatusOK || (cached > 0) != step.cached {
			t.Errorf("%s: status %d, %d cached tokens, want a hit %v", step.who, code, cached, step.cached)
		}
	}
	if code, _ := ask("key-alice-0123456789", "standard", "banking"); code != http.StatusBadRequest {
		t.Errorf("a banking request on the standard channel: status %d, want 400", code)
	}
	if code, _ := ask("key-alice-0123456789", "", "banking"); code != http.StatusOK {
		t.Errorf("a banking request routed by its tag: status %d", code)
	}

	// realtime no longer isolated: the banking rule refuses the reload.
	if err := os.WriteFile(td.d.flags.Config, []byte(fmt.Sprintf(isolatedConfig, addr, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	res := td.d.reload("test", nil, true)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "compliance rule banking") {
		t.Fatalf("a reload breaking the rule: %v, want it refused naming the rule", res.Err)
	}
	td.d.mu.Lock()
	still := td.d.cfg.Channels["realtime"].Isolated
	td.d.mu.Unlock()
	if !still {
		t.Error("the rejected reload changed the running config")
	}
}

// TestEmbeddingsKeepIsolationAndCompliance: an embedding in an isolated
// channel caches its blocks in its user's own chain (another user's
// completion of the same text hit them before: 16 cached tokens), and a
// tag bound by a compliance rule is refused on another channel, as for
// completions.
func TestEmbeddingsKeepIsolationAndCompliance(t *testing.T) {
	addr := freePort(t)
	model := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	startDaemonFlags(t, fmt.Sprintf(isolatedConfig, addr, true), ServeFlags{Model: model})
	text := strings.Repeat("An embedding must not leak what its user wrote. ", 8)
	post := func(key, path string, body map[string]any) (int, []byte) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", "http://"+addr+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.Bytes()
	}
	if code, body := post("key-alice-0123456789", "/v1/embeddings", map[string]any{"input": text, "channel": "realtime"}); code != http.StatusOK {
		t.Fatalf("alice's embedding: %d %s", code, body)
	}
	// In the shared channel: an isolated embedding's blocks were in the shared chain.
	code, body := post("key-bob-0123456789", "/v1/completions", map[string]any{"prompt": text, "max_tokens": 1, "channel": "standard"})
	var out struct {
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil {
		t.Fatalf("bob's completion: %d %s", code, body)
	}
	if out.Usage.Details.Cached != 0 {
		t.Errorf("bob hit %d tokens of alice's isolated embedding", out.Usage.Details.Cached)
	}
	if code, body := post("key-alice-0123456789", "/v1/embeddings", map[string]any{"input": text, "channel": "standard", "tags": []string{"banking"}}); code != http.StatusBadRequest {
		t.Errorf("a banking embedding on standard: %d %s, want 400", code, body)
	}
}
