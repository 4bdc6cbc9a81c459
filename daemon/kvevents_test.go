package daemon

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/kvcache"
	"github.com/batchd/batchd/kvevents"
	"github.com/batchd/batchd/testing/synth"
)

// kvSubscriber is a router's view of one replica: the blocks its events
// announce, as llm-d's indexer decodes them.
type kvSubscriber struct {
	t       *testing.T
	msgs    chan zmq4.Msg
	held    map[uint64][]uint32 // hash -> the block's tokens
	parent  map[uint64]uint64
	stored  [][]uint64 // each BlockStored's hashes, in order
	removed []uint64
	lastSeq int64
}

func subscribeKV(t *testing.T, td *testDaemon) *kvSubscriber {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := zmq4.NewSub(ctx)
	t.Cleanup(func() { cancel(); _ = sub.Close() })
	ep := "tcp://" + td.d.kvPub.Addr().String()
	if td.d.kvPub.Addr().Network() == "unix" {
		ep = "ipc://" + td.d.kvPub.Addr().String()
	}
	if err := sub.Dial(ep); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !td.d.kvPub.Subscribed("kv@"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the subscription never reached the publisher")
		}
	}
	s := &kvSubscriber{t: t, msgs: make(chan zmq4.Msg, 4096), held: map[uint64][]uint32{}, parent: map[uint64]uint64{}, lastSeq: -1}
	go func() {
		for {
			m, err := sub.Recv()
			if err != nil {
				close(s.msgs)
				return
			}
			s.msgs <- m
		}
	}()
	return s
}

// drain applies the messages that arrive until none has for quiet.
func (s *kvSubscriber) drain(topic string, quiet time.Duration) {
	s.t.Helper()
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				return
			}
			s.apply(topic, m)
		case <-time.After(quiet):
			return
		}
	}
}

func (s *kvSubscriber) apply(topic string, m zmq4.Msg) {
	t := s.t
	t.Helper()
	if len(m.Frames) != 3 || string(m.Frames[0]) != topic || len(m.Frames[1]) != 8 {
		t.Fatalf("message %q, want 3 frames on topic %s", m.Frames, topic)
	}
	seq := int64(binary.BigEndian.Uint64(m.Frames[1]))
	if seq <= s.lastSeq {
		t.Fatalf("sequence %d after %d", seq, s.lastSeq)
	}
	if s.lastSeq >= 0 && seq != s.lastSeq+1 {
		t.Fatalf("sequence %d after %d: a message was dropped", seq, s.lastSeq)
	}
	s.lastSeq = seq
	_, evs, err := kvevents.Decode(m.Frames[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		switch ev.Kind {
		case kvcache.Stored:
			if ev.Medium != "CPU" || len(ev.Tokens) != ev.BlockSize*len(ev.Hashes) {
				t.Fatalf("stored %+v", ev)
			}
			p := uint64(0)
			if ev.Parent != nil {
				p = *ev.Parent
			}
			for i, h := range ev.Hashes {
				toks := make([]uint32, ev.BlockSize)
				for j, id := range ev.Tokens[i*ev.BlockSize : (i+1)*ev.BlockSize] {
					toks[j] = uint32(id)
				}
				s.held[h], s.parent[h] = toks, p
				p = h
			}
			s.stored = append(s.stored, ev.Hashes)
		case kvcache.Removed:
			for _, h := range ev.Hashes {
				if _, ok := s.held[h]; !ok {
					t.Fatalf("BlockRemoved of %x, never stored", h)
				}
				delete(s.held, h)
				s.removed = append(s.removed, h)
			}
		case kvcache.Cleared:
			clear(s.held)
		}
	}
}

// chain is the tokens of the held blocks from the root to h.
func (s *kvSubscriber) chain(h uint64) []uint32 {
	var out []uint32
	for ; h != 0; h = s.parent[h] {
		toks, ok := s.held[h]
		if !ok {
			return nil
		}
		out = append(slices.Clone(toks), out...)
	}
	return out
}

func postJSON(t *testing.T, hc *http.Client, path string, body any) []byte {
	t.Helper()
	return postJSONStatus(t, hc, path, body, http.StatusOK)
}

// postJSONStatus posts body to the daemon's HTTP socket and returns the
// answer, failing unless its status is want.
func postJSONStatus(t *testing.T, hc *http.Client, path string, body any, want int) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := hc.Post("http://batchd"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s %s: %d %s, want %d", path, b, resp.StatusCode, out, want)
	}
	return out
}

// TestKVEventsAndRender: with kv_events on, a subscriber gets BlockStored
// for each full block of a prompt, whose tokens are the ids the render
// endpoints give for that request (so a router hashes a prompt as the
// engine runs it), BlockRemoved when a later load evicts them, in
// sequence; once the load ends, the blocks it holds are as many as the
// prefix cache's.
func TestKVEventsAndRender(t *testing.T) {
	cfg := "[model]\nchat_template = \"chatml\"\nname = \"qwen2.5-7b\"\n[engine]\nblock_size = 16\nkv_blocks = 24\n[kv_events]\nendpoint = \"tcp://127.0.0.1:0\"\nallow_from = [\"127.0.0.1\"]\npod = \"10.1.2.3:8000\"\n"
	td := startDaemonFlags(t, cfg, ServeFlags{Model: synth.TinyFile(t, 512), HTTPSocket: "http"})
	hc := unixHTTPClient(td.d.cfg.Server.HTTPSocket)
	name := td.d.defaultModel().Name
	if name != "qwen2.5-7b" {
		t.Fatalf("default model named %q, want model.name's", name)
	}
	topic := "kv@10.1.2.3:8000@" + name // the name the router asks for
	sub := subscribeKV(t, td)

	// Render, then run the same chat request.
	messages := []map[string]string{{"role": "system", "content": strings.Repeat("You answer in rhyme. ", 6)},
		{"role": "user", "content": "Tell me about the sea and the ships upon it."}}
	var chatIDs struct {
		TokenIDs []int `json:"token_ids"`
	}
	if err := json.Unmarshal(postJSON(t, hc, "/v1/chat/completions/render", map[string]any{"messages": messages}), &chatIDs); err != nil {
		t.Fatal(err)
	}
	var compIDs []struct {
		TokenIDs []int `json:"token_ids"`
	}
	if err := json.Unmarshal(postJSON(t, hc, "/v1/completions/render", map[string]any{"prompt": "Once upon a time"}), &compIDs); err != nil ||
		len(compIDs) != 1 || len(compIDs[0].TokenIDs) == 0 {
		t.Fatalf("completion render %+v (%v)", compIDs, err)
	}
	full := len(chatIDs.TokenIDs) / 16
	if full < 2 {
		t.Fatalf("a %d-token prompt: want at least two full blocks", len(chatIDs.TokenIDs))
	}
	postJSON(t, hc, "/v1/chat/completions", map[string]any{"messages": messages, "max_tokens": 2})
	sub.drain(topic, 300*time.Millisecond)
	var last uint64
	for _, hs := range sub.stored {
		for _, h := range hs {
			if len(sub.chain(h)) == full*16 {
				last = h
			}
		}
	}
	got := sub.chain(last)
	want := make([]uint32, full*16)
	for i := range want {
		want[i] = uint32(chatIDs.TokenIDs[i])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the stored chain of %d tokens is not the rendered prompt's first %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}

	// A load of other prompts evicts them.
	for i := range 12 {
		postJSON(t, hc, "/v1/completions", map[string]any{"prompt": fmt.Sprintf("%d %s", i, strings.Repeat("and then the dog ran far away ", 8)), "max_tokens": 4})
	}
	sub.drain(topic, 300*time.Millisecond)
	if !slices.Contains(sub.removed, last) {
		t.Fatalf("the prompt's last block was never removed (%d removals)", len(sub.removed))
	}
	st := td.d.defaultModel().Engine.Stats()
	if st.Running != 0 || len(sub.held) != st.KVBlocksCached {
		t.Fatalf("subscriber holds %d blocks; the idle prefix cache %d (%d running)", len(sub.held), st.KVBlocksCached, st.Running)
	}
	t.Logf("%d BlockStored events, %d blocks removed, %d held, last sequence %d", len(sub.stored), len(sub.removed), len(sub.held), sub.lastSeq)
}

// TestServedModelName: model.name (vLLM's --served-model-name) is the
// model's name in /v1/models, in the metrics the autoscaler and the
// endpoint picker read, and in requests and renders (the file's name
// still answers, as an alias); another name is model_not_found.
func TestServedModelName(t *testing.T) {
	file := synth.TinyFile(t, 512)
	td := startDaemonFlags(t, "[model]\nchat_template = \"chatml\"\nname = \"qwen2.5-7b\"\n", ServeFlags{Model: file, HTTPSocket: "http"})
	hc := unixHTTPClient(td.d.cfg.Server.HTTPSocket)
	resp, err := hc.Get("http://batchd/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"qwen2.5-7b"`) {
		t.Errorf("/v1/models: %s", b)
	}
	for _, model := range []string{"qwen2.5-7b", config.ModelName(file)} {
		postJSON(t, hc, "/v1/completions", map[string]any{"model": model, "prompt": "Once", "max_tokens": 2})
		postJSON(t, hc, "/v1/completions/render", map[string]any{"model": model, "prompt": "Once"})
	}
	postJSONStatus(t, hc, "/v1/completions", map[string]any{"model": "llama-3-8b", "prompt": "Once", "max_tokens": 2}, http.StatusNotFound)
	resp, err = hc.Get("http://batchd/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `vllm:num_requests_running{model_name="qwen2.5-7b"}`) {
		t.Errorf("/metrics without the served name:\n%s", b)
	}
}
