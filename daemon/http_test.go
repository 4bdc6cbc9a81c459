package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	client "github.com/batchd/batchd/clients/go"
	"github.com/batchd/batchd/engine"
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
			rt := td.d.runtime()
			text, err := renderChat(rt.Chat, rt.Model.Tokenizer, chatRequest{Messages: []byte(msgs), AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			prompt, err := tokenizeChat(context.Background(), rt.Model.Tokenizer, text)
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
				Model: openai.ChatModel(modelID(path)), Messages: oms, MaxTokens: openai.Int(n), Temperature: openai.Float(0)})
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
	out, err := exec.Command("bash", "testdata/curl_http_api.sh", td.d.cfg.Server.HTTPSocket, modelID(td.d.cfg.Model.Path)).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
}
