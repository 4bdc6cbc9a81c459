package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/batchd/batchd/clients/go"
)

const systemPrompt = "You are a careful assistant for a small bakery. Answer in one short sentence. " +
	"Prices: bread two coins, cake five coins, milk one coin. The shop opens at dawn and closes at dusk. "

// TestPinnedPrefixOutlivesRestarts: a pinned system prompt is in the
// cache before the first request, which hits it; the cache, saved when the
// daemon stops (as on an idle exit), answers the first request of the next
// daemon (as socket activation starts it) with a hit, pins or not; a
// damaged file is ignored and the answer is the same; warm fills the
// cache on demand.
func TestPinnedPrefixOutlivesRestarts(t *testing.T) {
	state := t.TempDir()
	cfg := fmt.Sprintf("state_dir = %q\n[prefix_cache]\npin = [%q]\n", state, systemPrompt)
	ask := func(td *testDaemon, prompt string) *client.Result {
		t.Helper()
		r, err := td.dial(t).Generate(context.Background(), client.Request{Prompt: prompt, MaxTokens: 8, Temperature: 0}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	td := startDaemon(t, cfg)
	waitPinned(t, td)
	first := ask(td, systemPrompt+"How much is a cake?")
	if first.Usage.CachedPromptTokens == 0 {
		t.Errorf("the first request after start: no prefix-cache hit on the pinned prompt (%+v)", first.Usage)
	}
	td.stop()
	file := filepath.Join(state, "prefix-cache-stories260K.bin")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("no cache file after the stop: %v", err)
	}

	td = startDaemon(t, fmt.Sprintf("state_dir = %q\n", state)) // no pins: the file alone
	again := ask(td, systemPrompt+"How much is a cake?")
	if again.Usage.CachedPromptTokens < first.Usage.CachedPromptTokens || again.Text != first.Text {
		t.Errorf("after a restart: %d cached (first run %d), text %q vs %q", again.Usage.CachedPromptTokens,
			first.Usage.CachedPromptTokens, again.Text, first.Text)
	}
	td.stop()

	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x5a
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	td = startDaemon(t, fmt.Sprintf("state_dir = %q\n", state))
	damaged := ask(td, systemPrompt+"How much is a cake?")
	if damaged.Usage.CachedPromptTokens != 0 || damaged.Text != first.Text {
		t.Errorf("a damaged file: %d cached, text %q, want 0 and %q", damaged.Usage.CachedPromptTokens, damaged.Text, first.Text)
	}
	if !strings.Contains(td.log.String(), "prefix cache file ignored") {
		t.Error("the damaged file was not logged")
	}

	// warm, as a timer before a peak would run it.
	chat, _ := json.Marshal([]map[string]string{{"role": "system", "content": "unused: stories260K has no template"}})
	if _, _, err := td.dial(t).Warm(context.Background(), "", nil, []json.RawMessage{chat}); err == nil {
		t.Error("a chat prefix on a model without a template was accepted")
	}
	other := "Once upon a time a baker named Tom baked bread for the whole village every single morning. "
	toks, cached, err := td.dial(t).Warm(context.Background(), "", []string{other}, nil)
	if err != nil || toks == 0 || cached != 0 {
		t.Fatalf("warm: %d tokens, %d cached, %v", toks, cached, err)
	}
	if r := ask(td, other+"What did Tom bake?"); r.Usage.CachedPromptTokens == 0 {
		t.Error("no hit after warm")
	}
}

func waitPinned(t *testing.T, td *testDaemon) {
	t.Helper()
	for i := 0; td.d.defaultModel().Engine.Stats().KVBlocksPinned == 0; i++ {
		if i > 2000 {
			t.Fatal("the pin never landed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
