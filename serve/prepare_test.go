package serve

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/testing/synth"
)

// newTestService is a Service over a tiny model speaking chatml, opened
// without the models manager (prepare takes the model as given).
func newTestService(t *testing.T) (*Service, *LoadedModel) {
	t.Helper()
	path := synth.TinyFile(t, 256)
	cfg := config.Default()
	cfg.Model.Path = path
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	svc, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	lm, err := Open(LoadSpec{Model: path, ChatTemplate: "chatml", KVBlocks: 64, BlockSize: 16}, svc.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lm.Close() })
	return svc, lm
}

var testTools = json.RawMessage(`[{"type":"function","function":{"name":"get_weather","parameters":` +
	`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`)

// TestToolsAndRegexRefusedBeforeCompiling: a request that both calls
// tools and asks for a regex is refused on the conflict, before its regex
// compiles (it was compiled first, and a hostile one was paid for); tools
// beside a JSON schema compile one grammar, calls or the answer.
func TestToolsAndRegexRefusedBeforeCompiling(t *testing.T) {
	svc, lm := newTestService(t)
	msgs := wire.JSON(`[{"role":"user","content":"Weather in Paris?"}]`)
	s := &wire.Submit{Messages: msgs, Tools: wire.JSON(testTools), Regex: "(a|b)+", MaxTokens: 4}
	_, _, err := svc.prepare(context.Background(), ipc.Peer{UID: 1}, s, lm)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeInvalidArgument || !strings.Contains(we.Message, "combine only with a JSON response_format") {
		t.Fatalf("tools with a regex: %v, want invalid_argument naming the conflict", err)
	}
	if n := svc.grammars.Len(); n != 0 {
		t.Fatalf("%d grammars compiled for a refused request", n)
	}
	s = &wire.Submit{Messages: msgs, Tools: wire.JSON(testTools), JSONSchema: wire.JSON(`{"type":"object"}`), MaxTokens: 4}
	if _, _, err := svc.prepare(context.Background(), ipc.Peer{UID: 1}, s, lm); err != nil || svc.grammars.Len() != 1 {
		t.Fatalf("tools with a schema: %v, %d grammars", err, svc.grammars.Len())
	}
}

// TestOneGrammarPerRequest: a request's grammar compiles once, in one
// place, whichever field asks for it: its tools',
// its schema's (tool_choice none leaves the tools out of it), none for a
// plain chat; and checks that need no model fail before any work.
func TestOneGrammarPerRequest(t *testing.T) {
	svc, lm := newTestService(t)
	ctx := context.Background()
	msgs := wire.JSON(`[{"role":"user","content":"Weather in Paris?"}]`)
	for _, tc := range []struct {
		name    string
		s       wire.Submit
		grammar bool
		cached  int // grammars in the cache after it
	}{
		{"plain chat", wire.Submit{Messages: msgs}, false, 0},
		{"tools", wire.Submit{Messages: msgs, Tools: wire.JSON(testTools)}, true, 1},
		{"schema", wire.Submit{Messages: msgs, JSONSchema: wire.JSON(`{"type":"integer"}`)}, true, 2},
		{"schema, tools off", wire.Submit{Messages: msgs, Tools: wire.JSON(testTools), ToolChoice: wire.JSON(`"none"`),
			JSONSchema: wire.JSON(`{"type":"integer"}`)}, true, 2},
	} {
		s := tc.s
		s.MaxTokens = 4
		req, _, err := svc.prepare(ctx, ipc.Peer{UID: 1}, &s, lm)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (req.Grammar != nil) != tc.grammar {
			t.Errorf("%s: grammar %v, want %v", tc.name, req.Grammar != nil, tc.grammar)
		}
		if n := svc.grammars.Len(); n != tc.cached {
			t.Errorf("%s: %d grammars cached, want %d", tc.name, n, tc.cached)
		}
	}
	for _, s := range []wire.Submit{
		{Prompt: "a", Messages: msgs},
		{Prompt: "a", Tools: wire.JSON(testTools)},
		{Prompt: "a", Channel: "warp"},
		{Prompt: "a", Choice: []string{""}},
	} {
		if _, _, err := svc.prepare(ctx, ipc.Peer{UID: 1}, &s, lm); !errors.Is(err, wire.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want invalid_argument", s, err)
		}
	}
	if n := svc.grammars.Len(); n != 2 {
		t.Errorf("refused requests compiled: %d grammars", n)
	}
}
