package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

// npmClients is the npm clients' directory, or skips t with how to install them.
func npmClients(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../testing/npmclients")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found (the JavaScript SDKs' check needs Node.js 20)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Skipf("the npm clients are not installed: npm ci --prefix %s", dir)
	}
	return dir
}

// runNpmCheck runs check.mjs against the daemon at addr (check: which
// checks; "" the default ones) and returns what it printed.
func runNpmCheck(t *testing.T, dir, addr, model, check string) []byte {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(dir, "check.mjs"))
	cmd.Env = append(os.Environ(), "BATCHD_URL=http://"+addr, "BATCHD_KEY=key-npm-clients-0123", "BATCHD_MODEL="+model,
		"BATCHD_CHECK="+check)
	b, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	return b
}

// TestNpmClients: the official JavaScript SDKs (openai,
// @anthropic-ai/sdk and the AI SDK from npm, pinned in testing/npmclients; .ci/run
// installs them) against the daemon over TCP with a key: Responses text,
// stream, a forced call and the next turn through previous_response_id;
// Messages text, stream, a forced tool_use and the tool_result turn; the
// AI SDK's default OpenAI provider (ai and @ai-sdk/openai, on /v1/responses):
// text, stream, a required tool, and an object.
func TestNpmClients(t *testing.T) {
	dir := npmClients(t)
	addr := freePort(t)
	startQwenChat(t, tcpWithKey(addr, "key-npm-clients-0123"))
	b := runNpmCheck(t, dir, addr, "tiny-qwen2", "")
	var got struct {
		ResponsesText struct {
			Status, Text string
			OutputTokens int
		}
		ResponsesStream struct {
			Types []string
			Text  string
		}
		ResponsesCall struct{ Name, Arguments, CallID string }
		ResponsesNext struct {
			Status                        string
			InputTokens, FirstInputTokens int
		}
		MessagesText, MessagesStream struct{ StopReason, Text string }
		MessagesToolUse              struct {
			StopReason, Name string
			Input            json.RawMessage
		}
		MessagesNext struct{ InputTokens, FirstInputTokens int }
		AISDK        struct {
			Text, Finish, Streamed, ToolName string
			ToolInput                        map[string]any
			Object                           map[string]any
		} `json:"aiSDK"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if got.ResponsesText.Status != "incomplete" || got.ResponsesText.OutputTokens != 12 || got.ResponsesStream.Text != got.ResponsesText.Text ||
		len(got.ResponsesStream.Types) < 6 || got.ResponsesStream.Types[0] != "response.created" ||
		!strings.HasPrefix(got.ResponsesStream.Types[len(got.ResponsesStream.Types)-1], "response.incomplete") {
		t.Errorf("responses text %+v, stream %+v", got.ResponsesText, got.ResponsesStream)
	}
	if got.ResponsesCall.Name != "add" || got.ResponsesCall.CallID == "" ||
		jsonvalid.Validate([]byte(`{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}`),
			[]byte(got.ResponsesCall.Arguments)) != nil {
		t.Errorf("responses call %+v", got.ResponsesCall)
	}
	if got.ResponsesNext.InputTokens <= got.ResponsesNext.FirstInputTokens {
		t.Errorf("previous_response_id: %+v", got.ResponsesNext)
	}
	if got.MessagesText.StopReason != "max_tokens" || got.MessagesStream != got.MessagesText {
		t.Errorf("messages %+v, stream %+v", got.MessagesText, got.MessagesStream)
	}
	if a := got.AISDK; a.Finish != "length" || a.Streamed != a.Text || a.ToolName != "add" || a.ToolInput["a"] == nil ||
		a.Object["n"] == nil {
		t.Errorf("AI SDK: %+v", a)
	}
	if got.MessagesToolUse.StopReason != "tool_use" || got.MessagesToolUse.Name != "add" || got.MessagesNext.InputTokens <= got.MessagesNext.FirstInputTokens {
		t.Errorf("messages tool_use %+v, next %+v", got.MessagesToolUse, got.MessagesNext)
	}
}

// TestNpmClientsHarmony: a harmony model (models/arch2's gpt-oss with
// OpenAI's template) gives the JavaScript SDKs a required call as a Qwen
// model does: the OpenAI SDK's chat completions, the AI SDK's chat
// provider and LangChain's ChatOpenAI with its tools bound.
func TestNpmClientsHarmony(t *testing.T) {
	dir := npmClients(t)
	file := filepath.Join(testmodels.Dir(t), "arch2", "tiny-gpt-oss.gguf")
	if _, err := os.Stat(file); err != nil {
		t.Skipf("%s not found", file)
	}
	tmpl, _ := filepath.Abs("../chat/testdata/harmony/openai-gpt-oss-120b.jinja")
	addr := freePort(t)
	cfg := fmt.Sprintf("[model]\nchat_template = %q\n[server]\nhttp_listen = %q\n[server.api_keys]\n%q = \"key-npm-clients-0123\"\n",
		tmpl, addr, fmt.Sprint(os.Getuid()))
	startDaemonFlags(t, cfg, ServeFlags{Model: file})
	b := runNpmCheck(t, dir, addr, "tiny-gpt-oss", "harmony")
	var got struct {
		Harmony struct {
			OpenAI []struct{ Finish, Name, Arguments string }
			AI     []struct {
				Finish, ToolName string
				Input            map[string]any
			}
			LangChain []struct {
				Finish, Name string
				Args         map[string]any
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	schema := `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}`
	called := 0
	for _, r := range got.Harmony.OpenAI {
		switch {
		case r.Finish == "length": // still reasoning
		case r.Finish != "tool_calls" || r.Name != "add" || jsonvalid.Validate([]byte(schema), []byte(r.Arguments)) != nil:
			t.Errorf("OpenAI SDK: %+v", r)
		default:
			called++
		}
	}
	for _, r := range got.Harmony.AI {
		switch {
		case r.Finish == "length":
		case r.ToolName != "add" || r.Input["a"] == nil || r.Input["b"] == nil:
			t.Errorf("AI SDK: %+v", r)
		default:
			called++
		}
	}
	for _, r := range got.Harmony.LangChain {
		switch {
		case r.Finish == "length":
		case r.Finish != "tool_calls" || r.Name != "add" || r.Args["a"] == nil || r.Args["b"] == nil:
			t.Errorf("LangChain: %+v", r)
		default:
			called++
		}
	}
	if called < 3 {
		t.Errorf("a call in %d of the tries: %+v", called, got.Harmony)
	}
}

// TestNpmClientsAgents: the OpenAI Agents SDK (@openai/agents) runs an
// agent with a function tool and an output type on /v1/responses: its
// first turn calls the tool (tool_choice required, the arguments held to
// the tool's schema), the SDK runs it, and the next turn, which carries
// the call and its output and still asks for the output type beside the
// (now disabled) tool, answers in the schema.
func TestNpmClientsAgents(t *testing.T) {
	dir := npmClients(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@openai", "agents")); err != nil {
		t.Skipf("@openai/agents is not installed: npm ci --prefix %s", dir)
	}
	addr := freePort(t)
	startQwenChat(t, tcpWithKey(addr, "key-npm-clients-0123"))
	b := runNpmCheck(t, dir, addr, "tiny-qwen2", "agents")
	var got struct {
		Agents struct {
			Calls [][]int64
			Final map[string]any
			Items []string
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	a := got.Agents
	want := []string{"tool_call_item", "tool_call_output_item", "message_output_item"}
	if _, ok := a.Final["sum"].(float64); len(a.Calls) != 1 || !ok || len(a.Final) != 1 || strings.Join(a.Items, " ") != strings.Join(want, " ") {
		t.Errorf("agent run: %s", b)
	}
}
