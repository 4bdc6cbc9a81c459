package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/testing/synth"
	"github.com/batchd/batchd/testing/testmodels"
)

// unixHTTPClient talks HTTP over the daemon's HTTP socket.
func unixHTTPClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

func (td *testDaemon) openai(t *testing.T) openai.Client {
	t.Helper()
	return openai.NewClient(option.WithBaseURL("http://batchd/v1/"), option.WithAPIKey("unused-on-a-unix-socket"),
		option.WithHTTPClient(unixHTTPClient(td.d.cfg.Server.HTTPSocket)), option.WithMaxRetries(0))
}

// TestOpenAISDK drives the HTTP API with the official OpenAI Go SDK: chat,
// streaming chat (with usage), completions, models, and errors it maps to
// typed *openai.Error values with OpenAI's status codes.
func TestOpenAISDK(t *testing.T) {
	model := filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf")
	td := startDaemonFlags(t, "", ServeFlags{Model: model, HTTPSocket: "http"})
	c := td.openai(t)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello there")}
	params := openai.ChatCompletionNewParams{Model: "tiny-llama3", Messages: msgs, MaxTokens: openai.Int(12), Temperature: openai.Float(0)}
	resp, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Usage.CompletionTokens == 0 ||
		resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Fatalf("chat: %+v", resp)
	}
	whole := resp.Choices[0].Message.Content

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	var finish string
	var usage openai.CompletionUsage
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != whole || finish != resp.Choices[0].FinishReason || usage.CompletionTokens != resp.Usage.CompletionTokens {
		t.Fatalf("streamed %q (%s, %+v), whole %q (%s, %+v)", text.String(), finish, usage, whole, resp.Choices[0].FinishReason, resp.Usage)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	params.Logprobs, params.TopLogprobs = openai.Bool(true), openai.Int(3)
	lpResp, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	content := lpResp.Choices[0].Logprobs.Content
	if int64(len(content)) != lpResp.Usage.CompletionTokens || len(content[0].TopLogprobs) != 3 ||
		content[0].Logprob != content[0].TopLogprobs[0].Logprob || content[0].Logprob > 0 {
		t.Fatalf("logprobs: %+v", lpResp.Choices[0].Logprobs)
	}

	comp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny-llama3",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon")}, MaxTokens: openai.Int(5), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Choices) != 1 || comp.Choices[0].FinishReason != "length" || comp.Usage.CompletionTokens != 5 {
		t.Fatalf("completion: %+v", comp)
	}

	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "tiny-llama3" {
		t.Fatalf("models: %+v", page.Data)
	}

	for _, tc := range []struct {
		name   string
		params openai.ChatCompletionNewParams
		status int
	}{
		{"unknown model", openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs}, 404},
		{"n=2", openai.ChatCompletionNewParams{Model: "tiny-llama3", Messages: msgs, N: openai.Int(2)}, 400},
		{"temperature", openai.ChatCompletionNewParams{Model: "tiny-llama3", Messages: msgs, Temperature: openai.Float(50)}, 400},
		{"no messages", openai.ChatCompletionNewParams{Model: "tiny-llama3", Messages: []openai.ChatCompletionMessageParamUnion{}}, 400},
	} {
		_, err := c.Chat.Completions.New(ctx, tc.params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Message == "" {
			t.Errorf("%s: %v, want status %d", tc.name, err, tc.status)
		}
	}
}

// TestGreedyChatSameOnEveryPath: a greedy chat on every models/arch model
// gives the same text over HTTP as over the msgpack socket, whose tokens
// (prompt and output) are those of rendering, tokenizing and generating in
// process. Models without a template of their own use a built-in one.
func TestGreedyChatSameOnEveryPath(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "arch")
	builtin := map[string]string{"gemma2": "gemma", "phi3": "phi3"}
	// No system turn: Mistral's template refuses one that breaks the
	// user/assistant alternation.
	msgs := `[{"role":"user","content":"Name a colour."},` +
		`{"role":"assistant","content":"Blue."},{"role":"user","content":"Another, ünïcode 🦙?"}]`
	for _, arch := range testmodels.ArchModels {
		t.Run(arch, func(t *testing.T) {
			path := filepath.Join(dir, "tiny-"+arch+".gguf")
			td := startDaemonFlags(t, "", ServeFlags{Model: path, HTTPSocket: "http", ChatTemplate: builtin[arch]})
			const n = 16
			// In process: render, tokenize, generate on the loaded runtime.
			rt := td.d.defaultModel()
			text, err := serve.RenderChat(context.Background(), rt.Chat, rt.Model.Tokenizer, serve.Conversation{Messages: []byte(msgs), AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			prompt, err := serve.TokenizeChat(context.Background(), rt.Model.Tokenizer, text)
			if err != nil {
				t.Fatal(err)
			}
			st, err := rt.Engine.Submit(context.Background(), engine.Request{Tokens: prompt, MaxTokens: n})
			if err != nil {
				t.Fatal(err)
			}
			_, local, _, err := st.Wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// msgpack
			var cm []client.Message
			if err := json.Unmarshal([]byte(msgs), &cm); err != nil {
				t.Fatal(err)
			}
			res, err := td.dial(t).Generate(context.Background(), client.Request{Messages: cm, MaxTokens: n}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.PromptTokens, prompt) || !slices.Equal(res.Tokens, local) {
				t.Fatalf("msgpack prompt %v\n   in process %v\nmsgpack output %v\n   in process %v", res.PromptTokens, prompt, res.Tokens, local)
			}
			// HTTP, through the SDK
			var oms []openai.ChatCompletionMessageParamUnion
			if err := json.Unmarshal([]byte(msgs), &oms); err != nil {
				t.Fatal(err)
			}
			oc := td.openai(t)
			resp, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: openai.ChatModel(config.ModelName(path)), Messages: oms, MaxTokens: openai.Int(n), Temperature: openai.Float(0)})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Choices[0].Message.Content; got != res.Text || resp.Usage.PromptTokens != int64(len(prompt)) {
				t.Fatalf("HTTP %q (%d prompt tokens), msgpack %q (%d)", got, resp.Usage.PromptTokens, res.Text, len(prompt))
			}
			if len(local) == 0 {
				t.Fatal("no tokens generated")
			}
		})
	}
}

// TestCurlScript runs testdata/curl_http_api.sh: the API as curl
// --unix-socket sees it (health, models, chat, streaming, completions and
// errors), on a tiny random model with a built-in template.
func TestCurlScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found")
	}
	td := startDaemonFlags(t, "", ServeFlags{Model: synth.TinyFile(t, 512), HTTPSocket: "http", ChatTemplate: "chatml"})
	out, err := exec.Command("bash", "testdata/curl_http_api.sh", td.d.cfg.Server.HTTPSocket, config.ModelName(td.d.cfg.Model.Path)).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
}

// TestLogprobsMatchLlamaCpp: the log-probabilities a request gets (the
// chosen token's and the top 5) are llama.cpp's for every models/arch
// model, within 1e-3, over msgpack; the HTTP API reports the same values.
func TestLogprobsMatchLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "arch")
	for _, arch := range testmodels.ArchModels {
		t.Run(arch, func(t *testing.T) {
			var g testmodels.ArchGolden
			for _, g = range testmodels.ArchGoldens(t, arch) {
				if len(g.PromptTokens) > 0 {
					break
				}
			}
			td := startDaemonFlags(t, "", ServeFlags{Model: filepath.Join(dir, "tiny-"+arch+".gguf"), HTTPSocket: "http"})
			n := len(g.Top5)
			res, err := td.dial(t).Generate(context.Background(), client.Request{Tokens: g.PromptTokens, MaxTokens: n,
				Logprobs: true, TopLogprobs: 5}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Logprobs) != len(res.Tokens) || len(res.Tokens) == 0 {
				t.Fatalf("%d logprobs for %d tokens", len(res.Logprobs), len(res.Tokens))
			}
			for i, lp := range res.Logprobs {
				if i >= len(g.Top5) {
					break
				}
				compareTop5(t, i, lp, g.Top5[i])
				if i < len(g.OutputTokens) && lp.Token != g.OutputTokens[i] {
					if !g.NearTie(i) {
						t.Fatalf("step %d: token %d, llama.cpp %d", i, lp.Token, g.OutputTokens[i])
					}
					break // a near tie: the rest of the path differs
				}
			}
			// The HTTP API reports the same log-probabilities.
			body := fmt.Sprintf(`{"prompt": %s, "max_tokens": %d, "temperature": 0, "logprobs": 5}`, toJSON(g.PromptTokens), len(res.Tokens))
			resp, err := unixHTTPClient(td.d.cfg.Server.HTTPSocket).Post("http://batchd/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Choices []struct {
					Logprobs struct {
						Tokens        []string             `json:"tokens"`
						TokenLogprobs []float64            `json:"token_logprobs"`
						TopLogprobs   []map[string]float64 `json:"top_logprobs"`
					} `json:"logprobs"`
				} `json:"choices"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
				t.Fatalf("decode: %v", err)
			}
			got := out.Choices[0].Logprobs
			if len(got.TokenLogprobs) != len(res.Logprobs) || len(got.TopLogprobs) != len(res.Logprobs) {
				t.Fatalf("HTTP: %d logprobs, msgpack %d", len(got.TokenLogprobs), len(res.Logprobs))
			}
			for i, lp := range res.Logprobs {
				if math.Abs(got.TokenLogprobs[i]-float64(lp.Logprob)) > 1e-6 || got.Tokens[i] != lp.Text {
					t.Fatalf("step %d: HTTP %q %v, msgpack %q %v", i, got.Tokens[i], got.TokenLogprobs[i], lp.Text, lp.Logprob)
				}
			}
		})
	}
}

// compareTop5: each of llama.cpp's top 5 is in ours with its log-probability
// within 1e-3, unless it sits at the edge of the list in a tie with our 5th.
func compareTop5(t *testing.T, step int, lp wire.Logprob, ref [][2]float64) {
	t.Helper()
	if len(lp.Top) != 5 {
		t.Fatalf("step %d: %d alternatives, want 5", step, len(lp.Top))
	}
	ours := map[int]float64{}
	for _, a := range lp.Top {
		ours[a.Token] = float64(a.Logprob)
	}
	if math.Abs(float64(lp.Logprob)-ours[lp.Token]) > 1e-6 && lp.Token == lp.Top[0].Token {
		t.Fatalf("step %d: chosen token's logprob %v differs from its top entry %v", step, lp.Logprob, ours[lp.Token])
	}
	edge := float64(lp.Top[4].Logprob)
	for _, e := range ref {
		got, ok := ours[int(e[0])]
		switch {
		case ok && math.Abs(got-e[1]) > 1e-3:
			t.Fatalf("step %d: token %d log-prob %.6f, llama.cpp %.6f", step, int(e[0]), got, e[1])
		case !ok && math.Abs(e[1]-edge) > 1e-3:
			t.Fatalf("step %d: llama.cpp's token %d (%.6f) is not in our top 5 (5th %.6f)", step, int(e[0]), e[1], edge)
		}
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// startQwenChat serves arch/tiny-qwen2 under Qwen 2.5's chat template (its
// tools in Hermes' format), the model the API tests talk to, with the
// HTTP API on a socket; extra is more TOML after [model].
func startQwenChat(t *testing.T, extra string) *testDaemon {
	t.Helper()
	dir := testmodels.Dir(t)
	cfg := fmt.Sprintf("[model]\nchat_template = %q\n", filepath.Join(dir, "chat", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja")) + extra
	return startDaemonFlags(t, cfg, ServeFlags{Model: filepath.Join(dir, "arch", "tiny-qwen2.gguf"), HTTPSocket: "http"})
}

// tcpWithKey is the config that also serves the HTTP API on addr, where
// key admits this process's user (the JavaScript clients and Codex speak
// TCP only).
func tcpWithKey(addr, key string) string {
	return fmt.Sprintf("[server]\nhttp_listen = %q\n[server.api_keys]\n%q = %q\n", addr, fmt.Sprint(os.Getuid()), key)
}
