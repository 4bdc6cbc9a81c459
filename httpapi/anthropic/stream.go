package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// out writes one answer: Anthropic's server-sent events while streaming,
// or the whole message.
type out struct {
	w        http.ResponseWriter
	model    string
	id       string
	prompt   int
	thinking bool // the request asked for thinking
	omit     bool // and for its blocks without their text

	began, failed bool
	block         string // the open block's type ("" none)
	index         int    // the open block's index
	calls         int    // tool_use blocks opened
}

// usage is Anthropic's usage object.
type usage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
}

// message is the whole answer (and message_start's, empty).
type message struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        usage            `json:"usage"`
}

// event writes one server-sent event.
func (o *out) event(name string, v any) {
	if o.failed {
		return
	}
	if !o.began {
		h := o.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		o.w.WriteHeader(http.StatusOK)
		o.began = true
	}
	b, _ := json.Marshal(v)
	if _, err := o.w.Write([]byte("event: " + name + "\ndata: " + string(b) + "\n\n")); err != nil {
		o.failed = true
		return
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
}

// open starts a block of typ (closing the open one); start is its
// content_block.
func (o *out) open(typ string, start map[string]any) {
	if o.block != "" {
		o.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": o.index})
		o.index++
	}
	o.block = typ
	o.event("content_block_start", map[string]any{"type": "content_block_start", "index": o.index, "content_block": start})
}

func (o *out) delta(d map[string]any) {
	o.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": o.index, "delta": d})
}

// streamEvent writes a delta's pieces as blocks.
func (o *out) streamEvent(ev ipc.Event) {
	if ev.Reasoning != "" && o.thinking {
		if o.block != "thinking" {
			o.open("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""})
		}
		if !o.omit {
			o.delta(map[string]any{"type": "thinking_delta", "thinking": ev.Reasoning})
		}
	}
	if ev.Text != "" {
		if o.block != "text" {
			o.open("text", map[string]any{"type": "text", "text": ""})
		}
		o.delta(map[string]any{"type": "text_delta", "text": ev.Text})
	}
	for _, c := range ev.ToolCalls {
		if c.Index >= o.calls { // a new call: its first piece names it
			o.calls = c.Index + 1
			o.open("tool_use", map[string]any{"type": "tool_use", "id": toolID(c.ID), "name": c.Name, "input": map[string]any{}})
		}
		if c.Arguments != "" {
			o.delta(map[string]any{"type": "input_json_delta", "partial_json": c.Arguments})
		}
	}
}

// run reads the stream to its end (always: nothing leaks), writing as it goes.
func (o *out) run(ctx context.Context, st ipc.RequestStream, stream bool, cancel func()) {
	stop := context.AfterFunc(ctx, cancel) // the client hung up
	defer stop()
	var text, thought strings.Builder
	if stream {
		o.event("message_start", map[string]any{"type": "message_start", "message": message{ID: o.id, Type: "message",
			Role: "assistant", Model: o.model, Content: []map[string]any{}, Usage: usage{InputTokens: o.prompt}}})
		o.event("ping", map[string]string{"type": "ping"})
	}
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			o.fail(http.StatusInternalServerError, err.Error())
			return
		}
		if stream {
			o.streamEvent(ev)
		} else {
			text.WriteString(ev.Text)
			thought.WriteString(ev.Reasoning)
		}
		d := ev.Done
		if d == nil {
			continue
		}
		switch d.FinishReason {
		case "cancelled", "error":
			o.fail(http.StatusInternalServerError, "request ended: "+d.FinishReason+": "+d.Message)
			return
		}
		reason, seq := stopReason(d)
		u := usage{InputTokens: d.Usage.PromptTokens, OutputTokens: d.Usage.CompletionTokens,
			CacheReadInputTokens: d.Usage.CachedPromptTokens}
		if stream {
			if o.block != "" {
				o.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": o.index})
			}
			o.event("message_delta", map[string]any{"type": "message_delta",
				"delta": map[string]any{"stop_reason": reason, "stop_sequence": seq}, "usage": u})
			o.event("message_stop", map[string]string{"type": "message_stop"})
			return
		}
		if d.Reasoning != "" {
			thought.Reset()
			thought.WriteString(d.Reasoning)
		}
		m := message{ID: o.id, Type: "message", Role: "assistant", Model: o.model, Content: o.blocks(thought.String(), text.String(), d),
			StopReason: &reason, Usage: u}
		if seq != nil {
			m.StopSequence = seq
		}
		writeJSON(o.w, http.StatusOK, m)
		return
	}
}

// blocks are a whole answer's content blocks: thinking, text, tool_use.
func (o *out) blocks(thought, text string, d *wire.Done) []map[string]any {
	bs := []map[string]any{}
	if thought != "" && o.thinking {
		if o.omit {
			thought = ""
		}
		bs = append(bs, map[string]any{"type": "thinking", "thinking": thought, "signature": ""})
	}
	if text != "" {
		bs = append(bs, map[string]any{"type": "text", "text": text})
	}
	for _, c := range d.ToolCalls {
		input := json.RawMessage(c.Arguments)
		if !json.Valid(input) || !strings.HasPrefix(strings.TrimSpace(c.Arguments), "{") {
			input = json.RawMessage("{}") // Anthropic's input is an object
		}
		bs = append(bs, map[string]any{"type": "tool_use", "id": toolID(c.ID), "name": c.Name, "input": input})
	}
	return bs
}

// toolID is a call's id in Anthropic's form.
func toolID(id string) string {
	if strings.HasPrefix(id, "toolu_") {
		return id
	}
	return "toolu_" + strings.TrimPrefix(id, "call_")
}

// stopReason is Anthropic's stop_reason and stop_sequence for a done frame.
func stopReason(d *wire.Done) (string, *string) {
	switch {
	case len(d.ToolCalls) > 0 || d.FinishReason == "tool_calls":
		return "tool_use", nil
	case d.FinishReason == "length":
		return "max_tokens", nil
	case d.StopSequence != "":
		s := d.StopSequence
		return "stop_sequence", &s
	}
	return "end_turn", nil
}

// fail reports an error: a status before anything was written, an error
// event after.
func (o *out) fail(status int, msg string) {
	if o.began {
		o.event("error", errorBody(status, msg))
		return
	}
	writeError(o.w, status, msg)
	o.failed = true
}
