package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/ipctest"
	"github.com/batchd/batchd/ipc/wire"
)

// The fakes: a backend that streams "tok0 tok1 ..." (one delta per
// max_tokens) and an access layer with a per-user cap.
type (
	fakeBackend = ipctest.Backend
	fakeUsers   = ipctest.Users
)

func submitsOf(b *fakeBackend) []*wire.Submit { s, _ := b.Submits(); return s }
func peersOf(b *fakeBackend) []ipc.Peer       { _, p := b.Submits(); return p }

const testKey = "0123456789abcdef-test"

// startTCP serves on a loopback TCP listener, as http_listen does.
func startTCP(t *testing.T, b *fakeBackend, u *fakeUsers, o Options) (*Server, string) {
	t.Helper()
	o.Backend, o.Users, o.Model = b, u, "m"
	s := New(o)
	s.SetAPIKeys(map[string]ipc.Peer{testKey: {UID: 4242, GID: 4343}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return s, "http://" + ln.Addr().String()
}

func post(t *testing.T, url, key, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp, m
}

func TestAPIKeysAndStatusCodes(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, path, key, body string
		status                int
		errType               string
	}{
		{"no key", "/v1/chat/completions", "", chat, 401, "invalid_request_error"},
		{"wrong key", "/v1/chat/completions", "0123456789abcdef-nope", chat, 401, "invalid_request_error"},
		{"ok", "/v1/chat/completions", testKey, chat, 200, ""},
		{"bad json", "/v1/chat/completions", testKey, `{"messages":`, 400, "invalid_request_error"},
		{"two values", "/v1/chat/completions", testKey, chat + chat, 400, "invalid_request_error"},
		{"wrong model", "/v1/chat/completions", testKey, `{"model":"x","messages":[]}`, 404, "invalid_request_error"},
		{"no messages", "/v1/chat/completions", testKey, `{"model":"m"}`, 400, "invalid_request_error"},
		{"n=3", "/v1/completions", testKey, `{"prompt":"a","n":3}`, 400, "invalid_request_error"},
		{"logprobs over 5", "/v1/completions", testKey, `{"prompt":"a","logprobs":9}`, 400, "invalid_request_error"},
		{"top_logprobs alone", "/v1/chat/completions", testKey, `{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}`, 400, "invalid_request_error"},
		{"max_tokens 0", "/v1/completions", testKey, `{"prompt":"a","max_tokens":0}`, 400, "invalid_request_error"},
		{"seed -2", "/v1/completions", testKey, `{"prompt":"a","seed":-2}`, 400, "invalid_request_error"},
		{"two prompts", "/v1/completions", testKey, `{"prompt":["a","b"]}`, 400, "invalid_request_error"},
		{"stop type", "/v1/completions", testKey, `{"prompt":"a","stop":5}`, 400, "invalid_request_error"},
		{"no route", "/v1/nothing", testKey, `{}`, 404, "invalid_request_error"},
		{"no embeddings", "/v1/embeddings", testKey, `{"input": "x"}`, 501, "invalid_request_error"},
	} {
		resp, m := post(t, base+tc.path, tc.key, tc.body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (%v)", tc.name, resp.StatusCode, tc.status, m)
			continue
		}
		if tc.errType != "" {
			e, _ := m["error"].(map[string]any)
			if e == nil || e["type"] != tc.errType || e["message"] == "" {
				t.Errorf("%s: body %v", tc.name, m)
			}
		}
	}
	if len(peersOf(b)) != 1 || peersOf(b)[0].UID != 4242 {
		t.Errorf("the key's user did not reach the backend: %+v", peersOf(b))
	}
	for code, status := range map[string]int{wire.CodeQueueFull: 429, wire.CodeUnavailable: 503,
		wire.CodeInvalidArgument: 400, wire.CodePermissionDenied: 403, wire.CodeInternal: 500} {
		b.Err = wire.Errorf(code, "x")
		if resp, _ := post(t, base+"/v1/completions", testKey, `{"prompt":"a"}`); resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d", code, resp.StatusCode, status)
		}
	}
	b.Err = nil
	b.State = "loading"
	resp, _ := post(t, base+"/v1/completions", testKey, `{"prompt":"a"}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("loading: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if h, _ := http.Get(base + "/health"); h == nil || h.StatusCode != 503 {
		t.Errorf("health while loading: %v", h)
	}
	if u.InFlight() != 0 {
		t.Errorf("%d requests still counted in flight", u.InFlight())
	}
}

func TestMappingToSubmit(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	resp, _ := post(t, base+"/v1/chat/completions", testKey, `{"messages":[{"role":"user","content":"hi","x":1}],
		"max_tokens":9,"max_completion_tokens":7,"temperature":0.5,"top_p":0.9,"seed":-1,"stop":"END",
		"frequency_penalty":0.5,"presence_penalty":-0.5,"top_k":4,"channel":"bulk","tools":[{"type":"function"}]}`)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	s := submitsOf(b)[0]
	if s.MaxTokens != 7 || s.Temperature != 0.5 || s.TopP != 0.9 || s.Seed != wire.SeedRandom || len(s.Stop) != 1 ||
		s.FrequencyPenalty != 0.5 || s.PresencePenalty != -0.5 || s.TopK != 4 || s.Channel != "bulk" ||
		string(s.Messages) != `[{"role":"user","content":"hi","x":1}]` || string(s.Tools) != `[{"type":"function"}]` {
		t.Errorf("submit: %+v", s)
	}
	post(t, base+"/v1/completions", testKey, `{"prompt":[5,6,7]}`)
	if s := submitsOf(b)[1]; len(s.Tokens) != 3 || s.Temperature != 1 {
		t.Errorf("token prompt, default temperature 1: %+v", s)
	}
}

// TestStreamShape: role chunk, content chunks, finish chunk, usage chunk,
// then [DONE], each a "data:" event.
func TestStreamShape(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			events = append(events, line)
		}
	}
	want := []string{`"delta":{"role":"assistant","content":""}`, `"delta":{"content":"tok0 "}`, `"delta":{"content":"tok1 "}`,
		`"finish_reason":"length"`, `"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4`, `[DONE]`}
	if len(events) != len(want) {
		t.Fatalf("events %q", events)
	}
	for i, w := range want {
		if !strings.HasPrefix(events[i], "data: ") || !strings.Contains(events[i], w) {
			t.Errorf("event %d: %s, want %s", i, events[i], w)
		}
	}
}

// TestHangUpCancels: a client that disconnects mid-stream has its request
// cancelled and read to its end; its per-user count is released.
func TestHangUpCancels(t *testing.T) {
	b, u := &fakeBackend{Delay: 5 * time.Millisecond}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/completions", strings.NewReader(`{"prompt":"a","max_tokens":100000,"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for b.Ended.Load() == 0 || u.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("request not ended: ended %d, in flight %d", b.Ended.Load(), u.InFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBoundsAndUserCap(t *testing.T) {
	b, u := &fakeBackend{Delay: 20 * time.Millisecond}, &fakeUsers{Limit: 1}
	_, base := startTCP(t, b, u, Options{MaxBodyBytes: 1024})
	if resp, _ := post(t, base+"/v1/completions", testKey, `{"prompt":"`+strings.Repeat("x", 2000)+`"}`); resp.StatusCode != 413 {
		t.Errorf("big body: %d, want 413", resp.StatusCode)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(t, base+"/v1/completions", testKey, `{"prompt":"a","max_tokens":20}`)
	}()
	for u.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	if resp, _ := post(t, base+"/v1/completions", testKey, `{"prompt":"a"}`); resp.StatusCode != 429 {
		t.Errorf("second request over the per-user cap: %d, want 429", resp.StatusCode)
	}
	<-done
}

// FuzzRequestBody: no body makes a handler panic or answer outside the
// statuses the API documents.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{`{"messages":[{"role":"user","content":"hi"}]}`, `{"prompt":[1,2]}`, `{"prompt":[[1]],"stop":["a"]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"stream":true}`, `{"max_tokens":1e99}`, `[]`, `null`} {
		f.Add(s)
	}
	b, u := &fakeBackend{}, &fakeUsers{}
	s := New(Options{Backend: b, Users: u, Model: "m"})
	s.SetAPIKeys(map[string]ipc.Peer{testKey: {UID: 1}})
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			req := httptest.NewRequest("POST", path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testKey)
			w := httptest.NewRecorder()
			s.http.Handler.ServeHTTP(w, req)
			switch w.Code {
			case 200, 400, 404, 413:
			default:
				t.Fatalf("%s %q: status %d", path, body, w.Code)
			}
			if w.Code != 200 {
				var e struct{ Error apiError }
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Message == "" {
					t.Fatalf("%s %q: error body %q", path, body, w.Body.String())
				}
			}
		}
	})
}

// TestBearerSchemeAnyCase: the auth scheme is case-insensitive (RFC 9110),
// so bearer and BEARER are Bearer; a key alone or another scheme is not.
func TestBearerSchemeAnyCase(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	for header, status := range map[string]int{"Bearer " + testKey: 200, "bearer " + testKey: 200,
		"BEARER  " + testKey: 200, testKey: 401, "Basic " + testKey: 401, "Bearer": 401, "Bearer ": 401} {
		req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
		req.Header.Set("Authorization", header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("Authorization %q: status %d, want %d", header, resp.StatusCode, status)
		}
	}
}

// TestXAPIKey: Anthropic's clients send the key as x-api-key; it admits
// as a bearer key does, a wrong one is a 401, and Authorization wins.
func TestXAPIKey(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	for _, c := range []struct {
		auth, key string
		status    int
	}{{"", testKey, 200}, {"", "wrong", 401}, {"Bearer wrong", testKey, 401}, {"Bearer " + testKey, "wrong", 200}} {
		req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		req.Header.Set("X-Api-Key", c.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("Authorization %q, x-api-key %q: status %d, want %d", c.auth, c.key, resp.StatusCode, c.status)
		}
	}
}

// TestSeedAndMaxTokens: seed -1 is "random" (wire.SeedRandom, as on the
// msgpack socket), an absent seed too; other negatives are refused, as is a
// max_tokens past int32 (with a message that says the bound).
func TestSeedAndMaxTokens(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{})
	for _, body := range []string{`{"prompt":"a","seed":-1}`, `{"prompt":"a"}`, `{"prompt":"a","seed":7}`} {
		if resp, _ := post(t, base+"/v1/completions", testKey, body); resp.StatusCode != 200 {
			t.Fatalf("%s: %s", body, resp.Status)
		}
	}
	if s := submitsOf(b); s[0].Seed != wire.SeedRandom || s[1].Seed != wire.SeedRandom || s[2].Seed != 7 {
		t.Errorf("seeds %d %d %d, want -1 -1 7", s[0].Seed, s[1].Seed, s[2].Seed)
	}
	resp, m := post(t, base+"/v1/completions", testKey, `{"prompt":"a","max_tokens":9223372036854775807}`)
	msg := fmt.Sprint(m["error"])
	if resp.StatusCode != 400 || strings.Contains(msg, "at least") || !strings.Contains(msg, "at most") {
		t.Errorf("max_tokens 2^63-1: %d %s", resp.StatusCode, msg)
	}
}

// TestAPIKeyUserPassesThePolicy: a key stands for its user, whom
// allowed_users and allowed_groups judge as they judge a Unix peer: with
// allowed_users = ["0"] the key of uid 4242 is refused, with its gid
// allowed it is served.
func TestAPIKeyUserPassesThePolicy(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{Pol: ipc.Policy{AllowedUIDs: []uint32{0}}}
	_, base := startTCP(t, b, u, Options{})
	resp, m := post(t, base+"/v1/completions", testKey, `{"prompt":"a"}`)
	if resp.StatusCode != 403 || len(submitsOf(b)) != 0 {
		t.Fatalf("uid 4242's key under allowed_users [0]: %d %v, %d submits", resp.StatusCode, m, len(submitsOf(b)))
	}
	u.SetPolicy(ipc.Policy{AllowedUIDs: []uint32{0}, AllowedGIDs: []uint32{4343}})
	if resp, _ := post(t, base+"/v1/completions", testKey, `{"prompt":"a"}`); resp.StatusCode != 200 {
		t.Fatalf("with its gid allowed: %d", resp.StatusCode)
	}
}

// TestFailedAuthClosesTheConnection: a 401 ends its connection (keyless
// clients kept them open with keep-alive and held every slot), and a
// connection that makes no authenticated request is closed after the
// pre-auth timeout, while an authenticated one stays open.
func TestFailedAuthClosesTheConnection(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{PreAuthTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(base, "http://")
	send := func(c net.Conn, key string) string {
		auth := ""
		if key != "" {
			auth = "Authorization: Bearer " + key + "\r\n"
		}
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n%sContent-Length: 14\r\n\r\n{\"prompt\":\"a\"}", auth)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "error: " + err.Error()
		}
		resp.Body.Close()
		return resp.Status
	}
	closedSoon := func(c net.Conn, within time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(within))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	bad, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if st := send(bad, "wrong-key-0123456789"); !strings.HasPrefix(st, "401") {
		t.Fatalf("wrong key: %s", st)
	}
	if !closedSoon(bad, time.Second) {
		t.Error("the connection stayed open after a 401")
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if !closedSoon(silent, 2*time.Second) {
		t.Error("a connection that never authenticated outlived the pre-auth timeout")
	}
	good, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if st := send(good, testKey); !strings.HasPrefix(st, "200") {
		t.Fatalf("good key: %s", st)
	}
	if closedSoon(good, 600*time.Millisecond) {
		t.Error("an authenticated connection was closed by the pre-auth timeout")
	}
}

// TestKeylessFloodCannotLockOutAKey: 300 TCP connections that never send a
// key fill a budget of 40; a client with a valid key is still served,
// because pending connections give way to new ones.
func TestKeylessFloodCannotLockOutAKey(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{MaxConnections: 40})
	addr := strings.TrimPrefix(base, "http://")
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for i := range 5 {
		req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("keyed request %d during the flood: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("keyed request %d: %s", i, resp.Status)
		}
	}
}

// TestAnonymousUser: with Options.Anonymous a keyless TCP request runs as
// that user (Ollama's clients send no key); a wrong key is still a 401,
// and without the option a keyless request is a 401.
func TestAnonymousUser(t *testing.T) {
	b, u := &fakeBackend{}, &fakeUsers{}
	_, base := startTCP(t, b, u, Options{Anonymous: &ipc.Peer{UID: 777, GID: 778}})
	if resp, _ := post(t, base+"/v1/completions", "", `{"prompt":"a"}`); resp.StatusCode != 200 {
		t.Fatalf("keyless: %d", resp.StatusCode)
	}
	if resp, _ := post(t, base+"/v1/completions", "wrong-key-0123456789", `{"prompt":"a"}`); resp.StatusCode != 401 {
		t.Errorf("a wrong key: %d, want 401", resp.StatusCode)
	}
	if len(peersOf(b)) != 1 || peersOf(b)[0].UID != 777 {
		t.Errorf("peers %+v, want the anonymous user", peersOf(b))
	}
	_, strict := startTCP(t, &fakeBackend{}, &fakeUsers{}, Options{})
	if resp, _ := post(t, strict+"/v1/completions", "", `{"prompt":"a"}`); resp.StatusCode != 401 {
		t.Errorf("keyless without anonymous_user: %d, want 401", resp.StatusCode)
	}
}
