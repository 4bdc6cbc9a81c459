package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// message is Ollama's chat message.
type message struct {
	Role      string          `json:"role"`
	Content   string          `json:"content"`
	Thinking  string          `json:"thinking,omitempty"`
	Images    json.RawMessage `json:"images,omitempty"`
	ToolCalls []toolCall      `json:"tool_calls,omitempty"`
	ToolName  string          `json:"tool_name,omitempty"`
}

type toolCall struct {
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// request is what /api/chat and /api/generate share.
type request struct {
	Model     string          `json:"model"`
	Stream    *bool           `json:"stream"`
	Format    json.RawMessage `json:"format"`
	Options   map[string]any  `json:"options"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	Think     json.RawMessage `json:"think"`
	Tools     json.RawMessage `json:"tools"`
	// chat
	Messages []message `json:"messages"`
	// generate
	Prompt  *string         `json:"prompt"`
	System  string          `json:"system"`
	Raw     bool            `json:"raw"`
	Suffix  string          `json:"suffix"`
	Images  json.RawMessage `json:"images"`
	Context []int           `json:"context"`
	// Template replaces the model's (Ollama's per-request template): not served.
	Template string `json:"template"`
	// Logprobs and TopLogprobs (Ollama 0.12): not served on this API.
	Logprobs    bool `json:"logprobs"`
	TopLogprobs int  `json:"top_logprobs"`
}

func (a *API) chat(w http.ResponseWriter, r *http.Request, p ipc.Peer) { a.serve(w, r, p, true) }
func (a *API) generate(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	a.serve(w, r, p, false)
}

func (a *API) serve(w http.ResponseWriter, r *http.Request, p ipc.Peer, chat bool) {
	start := time.Now()
	var req request
	if !decode(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	ka, err := keepAlive(req.KeepAlive)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// No prompt and no messages: load (or, with keep_alive 0, unload) the model.
	if chat && len(req.Messages) == 0 || !chat && (req.Prompt == nil || *req.Prompt == "") && !req.Raw {
		a.load(w, r, p, req, ka, chat)
		return
	}
	sub, msg := submitOf(&req, chat)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	sub.KeepAlive = ka
	if err := a.users.AcquireUser(p); err != nil {
		writeWireError(w, err, req.Model)
		return
	}
	defer a.users.ReleaseUser(p)
	st, err := a.b.Submit(r.Context(), p, sub)
	if err != nil {
		writeWireError(w, err, req.Model)
		return
	}
	o := &out{w: w, chat: chat, model: req.Model, start: start, loaded: time.Since(start), prompt: st.PromptTokens()}
	stream := req.Stream == nil || *req.Stream
	o.run(r.Context(), st, stream, func() { _ = a.b.Cancel(p, st.RequestID(), true) })
}

// keepAlive reads Ollama's keep_alive: seconds (a number) or a duration.
func keepAlive(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err == nil {
		return strconv.FormatFloat(n, 'f', -1, 64), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("keep_alive: want seconds or a duration such as \"5m\"")
	}
	return s, nil
}

// load loads or unloads a model, counted against the user's cap as a
// request is, and given up when the client leaves.
func (a *API) load(w http.ResponseWriter, r *http.Request, p ipc.Peer, req request, ka string, chat bool) {
	unload := ka == "0" || ka == "0s"
	if err := a.users.AcquireUser(p); err != nil {
		writeWireError(w, err, req.Model)
		return
	}
	defer a.users.ReleaseUser(p)
	if err := a.b.LoadModel(r.Context(), p, req.Model, ka, unload); err != nil {
		writeWireError(w, err, req.Model)
		return
	}
	reason := "load"
	if unload {
		reason = "unload"
	}
	resp := map[string]any{"model": req.Model, "created_at": time.Now().UTC(), "done": true, "done_reason": reason}
	if chat {
		resp["message"] = message{Role: "assistant"}
	} else {
		resp["response"] = ""
	}
	writeJSON(w, http.StatusOK, resp)
}

// submitOf maps a request to a submit; a message says what cannot be served.
func submitOf(req *request, chat bool) (*wire.Submit, string) {
	s := &wire.Submit{Type: wire.TypeSubmit, Model: req.Model, Stream: true, Temperature: 0.8, Seed: wire.SeedRandom,
		TopK: 40, TopP: 0.9} // Ollama's defaults
	if msg := applyOptions(s, req.Options); msg != "" {
		return nil, msg
	}
	switch {
	case len(req.Images) > 0 && string(req.Images) != "null":
		return nil, "images: batchd serves text models only"
	case len(req.Context) > 0:
		return nil, "context: the deprecated token context is not served; send the conversation to /api/chat"
	case req.Template != "":
		return nil, "template: a per-request template is not served; set the model's chat_template in the config"
	case req.Logprobs || req.TopLogprobs > 0:
		return nil, "logprobs: not served on Ollama's API; /v1/chat/completions and /v1/completions report them"
	}
	if msg := applyFormat(s, req.Format); msg != "" {
		return nil, msg
	}
	think, msg := applyThink(s, req.Think)
	if msg != "" {
		return nil, msg
	}
	if !chat && req.Suffix != "" { // fill in the middle: the vocabulary's FIM tokens, no template
		if req.System != "" || len(req.Tools) > 0 || think {
			return nil, "suffix: no system, tools or think with fill-in-the-middle"
		}
		s.Prompt, s.Suffix, s.ReasoningFormat, s.TemplateKwargs = *req.Prompt, req.Suffix, "", nil
		return s, ""
	}
	if !chat && req.Raw {
		if len(req.Tools) > 0 || think {
			return nil, "raw: no tools or think without the template"
		}
		s.Prompt, s.ReasoningFormat, s.TemplateKwargs = *req.Prompt, "", nil
		return s, ""
	}
	var msgs []map[string]any
	if !chat {
		if req.System != "" {
			msgs = append(msgs, map[string]any{"role": "system", "content": req.System})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": *req.Prompt})
	}
	for _, m := range req.Messages {
		if len(m.Images) > 0 && string(m.Images) != "null" {
			return nil, "images: batchd serves text models only"
		}
		mm := map[string]any{"role": m.Role, "content": m.Content}
		if m.Thinking != "" { // the template's reasoning field (gpt-oss's "thinking" is given it)
			mm["reasoning_content"] = m.Thinking
		}
		if m.ToolName != "" {
			mm["name"] = m.ToolName
		}
		if len(m.ToolCalls) > 0 {
			var calls []map[string]any
			for i, c := range m.ToolCalls {
				calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
					"function": map[string]any{"name": c.Function.Name, "arguments": string(c.Function.Arguments)}})
			}
			mm["tool_calls"] = calls
		}
		msgs = append(msgs, mm)
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, "messages: " + err.Error()
	}
	s.Messages = wire.JSON(b)
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		s.Tools = wire.JSON(req.Tools)
	}
	return s, ""
}

// applyFormat maps format: "json" is any JSON object, an object a schema.
func applyFormat(s *wire.Submit, f json.RawMessage) string {
	f = bytes.TrimSpace(f)
	switch {
	case len(f) == 0 || string(f) == "null" || string(f) == `""`:
	case string(f) == `"json"`:
		s.JSONObject = true
	case f[0] == '{': // Ollama has no strict: keywords a grammar cannot enforce are ignored, as Ollama does
		notStrict := false
		s.JSONSchema, s.JSONSchemaStrict = wire.JSON(f), &notStrict
	default:
		return `format: want "json" or a JSON Schema object`
	}
	return ""
}

// applyThink maps think: true returns the thought apart (message.thinking),
// false asks the template not to think; a level ("high", "medium", "low":
// gpt-oss's) is true with that reasoning effort. Absent leaves a thought
// written inline in the content, as Ollama does, and returns a harmony
// model's analysis channel apart, as Ollama does too.
func applyThink(s *wire.Submit, t json.RawMessage) (bool, string) {
	if len(t) == 0 || string(t) == "null" {
		s.ReasoningFormat = "inline"
		return false, ""
	}
	var on bool
	level := ""
	if err := json.Unmarshal(t, &on); err != nil {
		if json.Unmarshal(t, &level) != nil || (level != "high" && level != "medium" && level != "low") {
			return false, `think: want true, false, "high", "medium" or "low"`
		}
		on = true
	}
	s.ReasoningFormat = "auto"
	kwargs := fmt.Sprintf(`{"enable_thinking": %t}`, on)
	if level != "" {
		kwargs = fmt.Sprintf(`{"enable_thinking": true, "reasoning_effort": %q}`, level)
	}
	s.TemplateKwargs = wire.JSON(kwargs)
	return on, ""
}

// applyOptions maps Ollama's options to the sampler. Options about the
// runner (threads, GPU layers, batch size, mmap) are the daemon's and
// ignored; options that would change the output and that batchd does not
// implement are refused by name.
func applyOptions(s *wire.Submit, opts map[string]any) string {
	for k, v := range opts {
		f, isNum := v.(float64)
		switch k {
		case "num_predict", "temperature", "top_k", "top_p", "min_p", "seed", "repeat_penalty",
			"presence_penalty", "frequency_penalty", "num_ctx", "repeat_last_n", "mirostat", "typical_p", "tfs_z",
			"num_keep", "penalize_newline":
			if !isNum && k != "penalize_newline" {
				return fmt.Sprintf("options.%s: want a number", k)
			}
		}
		switch k {
		case "num_predict":
			if f > 0 {
				s.MaxTokens = int(min(f, math.MaxInt32))
			}
		case "temperature":
			s.Temperature = float32(f)
		case "top_k":
			s.TopK = int(f)
		case "top_p":
			s.TopP = float32(f)
		case "min_p":
			s.MinP = float32(f)
		case "seed":
			s.Seed = int64(f)
		case "repeat_penalty":
			if f != 1 && f != 0 {
				s.RepetitionPenalty = float32(f)
			}
		case "num_ctx":
			if f < 1 || f > math.MaxInt32 {
				return fmt.Sprintf("options.num_ctx %v: want a positive number of tokens", f)
			}
			s.ContextLimit = int(f)
		case "presence_penalty":
			s.PresencePenalty = float32(f)
		case "frequency_penalty":
			s.FrequencyPenalty = float32(f)
		case "repeat_last_n":
			if f != -1 && f != 0 && f != 64 {
				return fmt.Sprintf("options.repeat_last_n %v: batchd applies repeat_penalty over the whole output (-1)", f)
			}
		case "mirostat", "tfs_z":
			if f != 0 && !(k == "tfs_z" && f == 1) {
				return fmt.Sprintf("options.%s: not served by batchd", k)
			}
		case "typical_p":
			if f != 1 {
				return "options.typical_p: not served by batchd"
			}
		case "stop":
			list, ok := v.([]any)
			if !ok {
				return "options.stop: want a list of strings"
			}
			for _, x := range list {
				str, ok := x.(string)
				if !ok {
					return "options.stop: want a list of strings"
				}
				s.Stop = append(s.Stop, str)
			}
		}
	}
	if s.Temperature == 0 {
		s.TopK, s.TopP = 0, 0 // greedy: the filters change nothing
	}
	return ""
}

// argsObject is a call's arguments as Ollama sends them: a JSON object.
func argsObject(args string) json.RawMessage {
	if json.Valid([]byte(args)) && strings.HasPrefix(strings.TrimSpace(args), "{") {
		return json.RawMessage(args)
	}
	return json.RawMessage("{}")
}
