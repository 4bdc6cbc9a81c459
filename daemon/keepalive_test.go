package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/batchd/batchd/testing/testmodels"
)

// TestOnlyAdminsPinModels: a user who is not an admin asking keep_alive
// -1 (or hours past server.max_keep_alive) gets the cap, so no one can pin
// every model slot for others to wait on; an admin's -1 pins; NaN is a 400.
func TestOnlyAdminsPinModels(t *testing.T) {
	dir := modelsDir(t, "qwen2", "llama3")
	addr := freePort(t)
	cfg := fmt.Sprintf("models_dir = %q\n[server]\nhttp_listen = %q\nmax_keep_alive = \"10m\"\nadmin_users = [\"1002\"]\n"+
		"[server.api_keys]\n\"1001\" = \"key-user-0123456789\"\n\"1002\" = \"key-admin-0123456789\"\n", dir, addr)
	startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")})
	post := func(key string, body map[string]any) int {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", "http://"+addr+"/api/generate", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	expires := func(name string) time.Time {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/ps", nil)
		req.Header.Set("Authorization", "Bearer key-admin-0123456789")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ps api.ProcessResponse
		if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
			t.Fatal(err)
		}
		for _, m := range ps.Models {
			if m.Name == name+":latest" {
				return m.ExpiresAt
			}
		}
		t.Fatalf("%s not loaded: %+v", name, ps.Models)
		return time.Time{}
	}
	for _, ka := range []any{-1, "-1", 1e9} {
		if code := post("key-user-0123456789", map[string]any{"model": "qwen2", "keep_alive": ka}); code != http.StatusOK {
			t.Fatalf("keep_alive %v: %d", ka, code)
		}
		if e := expires("qwen2"); e.After(time.Now().Add(11 * time.Minute)) {
			t.Errorf("a user's keep_alive %v: expires %v, past the 10m cap", ka, e)
		}
	}
	for _, ka := range []any{"NaN", "Inf", "1e300"} {
		if code := post("key-user-0123456789", map[string]any{"model": "qwen2", "keep_alive": ka}); code != http.StatusBadRequest {
			t.Errorf("keep_alive %v: %d, want 400", ka, code)
		}
	}
	if code := post("key-admin-0123456789", map[string]any{"model": "llama3", "keep_alive": -1}); code != http.StatusOK {
		t.Fatalf("admin: %d", code)
	}
	if e := expires("llama3"); e.Before(time.Now().Add(24 * time.Hour)) {
		t.Errorf("an admin's keep_alive -1: expires %v, want pinned", e)
	}
}
