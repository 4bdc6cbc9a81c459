package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// responses serves POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req responsesRequest
	if !s.read(w, r, &req, func() string { return req.Model }) {
		return
	}
	var previous []map[string]any
	if req.PreviousResponseID != "" {
		prev, ok := s.stored.Get(p.UID, req.PreviousResponseID)
		if !ok || json.Unmarshal(prev.Messages, &previous) != nil {
			writeError(w, &httpError{status: http.StatusNotFound, typ: "invalid_request_error", param: "previous_response_id",
				msg: ipc.ErrResponseNotFound(req.PreviousResponseID).Message})
			return
		}
	}
	tools := toolSet{}
	sub, msgs, herr := responsesSubmit(&req, previous, tools)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if _, many := s.o.Backend.(ipc.ModelLister); !many {
		sub.Model = ""
	}
	release := s.admit(w, p)
	if release == nil {
		return
	}
	defer release()
	st, err := s.o.Backend.Submit(r.Context(), p, sub)
	if err != nil {
		writeError(w, modelError(err))
		return
	}
	o := &respOut{w: w, req: &req, stream: req.Stream, obj: responseObject(&req, cmp.Or(req.Model, s.o.Model)), tools: tools}
	stop := context.AfterFunc(r.Context(), func() { _ = s.o.Backend.Cancel(p, st.RequestID(), true) })
	defer stop()
	w.Header().Set("X-Request-Id", strconv.FormatUint(st.RequestID(), 10))
	o.run(st)
	if o.done && (req.Store == nil || *req.Store) {
		conv, err1 := json.Marshal(append(msgs, o.assistant()))
		obj, err2 := json.Marshal(o.obj)
		if err1 == nil && err2 == nil {
			s.stored.Put(p.UID, o.obj["id"].(string), ipc.StoredResponse{Messages: conv, Object: obj})
		}
	}
}

// getResponse serves GET /v1/responses/{id}: a stored response, its owner's only.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	if sr, ok := s.stored.Get(p.UID, r.PathValue("id")); ok {
		if sr.Object == nil { // stored over the socket: the conversation's last answer as a response
			writeJSON(w, http.StatusOK, socketResponse(r.PathValue("id"), sr.Messages))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(sr.Object)
		return
	}
	writeError(w, &httpError{status: http.StatusNotFound, typ: "invalid_request_error",
		msg: "response " + r.PathValue("id") + " not found"})
}

// deleteResponse serves DELETE /v1/responses/{id}.
func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	id := r.PathValue("id")
	if !s.stored.Delete(p.UID, id) {
		writeError(w, &httpError{status: http.StatusNotFound, typ: "invalid_request_error", msg: "response " + id + " not found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
}

// responseObject is a response in progress, with the request's settings.
func responseObject(req *responsesRequest, model string) map[string]any {
	tools := req.Tools
	if tools == nil {
		tools = []json.RawMessage{}
	}
	obj := map[string]any{"id": ipc.NewResponseID(), "object": "response", "created_at": time.Now().Unix(),
		"status": "in_progress", "model": model, "output": []any{}, "error": nil, "incomplete_details": nil,
		"instructions": req.Instructions, "metadata": metadataOf(req.Metadata),
		"parallel_tool_calls": req.ParallelToolCalls == nil || *req.ParallelToolCalls, "temperature": req.Temperature,
		"top_p": req.TopP, "max_output_tokens": req.MaxOutputTokens, "tools": tools, "tool_choice": "auto",
		"previous_response_id": nilIfEmpty(req.PreviousResponseID), "store": req.Store == nil || *req.Store,
		"truncation": "disabled", "text": map[string]any{"format": map[string]string{"type": "text"}}, "usage": nil}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		obj["tool_choice"] = req.ToolChoice
	}
	if req.Text != nil && len(req.Text.Format) > 0 {
		obj["text"] = map[string]any{"format": req.Text.Format}
	}
	if req.Reasoning != nil {
		obj["reasoning"] = req.Reasoning
	}
	return obj
}

func metadataOf(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// respOut builds one response: its output items as they stream, and the
// events that say so when streaming.
type respOut struct {
	w      http.ResponseWriter
	req    *responsesRequest
	stream bool
	obj    map[string]any
	seq    int
	failed bool
	done   bool // the response ended (completed or incomplete): it may be stored

	items     []map[string]any // output items, in order
	open      string           // the open item's type ("" none)
	reasoning strings.Builder  // the open reasoning item's text
	text      strings.Builder  // the open message's text
	calls     map[int]int      // a call's index -> its item's
	reasonTok int              // tokens of reasoning-only deltas
	tools     toolSet          // the request's tools, by the names the model sees
	args      map[int]string   // a custom call's arguments so far, by item
}

// event writes one server-sent event (each with its sequence number).
func (o *respOut) event(typ string, fields map[string]any) {
	if !o.stream || o.failed {
		return
	}
	if o.seq == 0 {
		h := o.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		o.w.WriteHeader(http.StatusOK)
	}
	fields["type"], fields["sequence_number"] = typ, o.seq
	o.seq++
	b, _ := json.Marshal(fields)
	if _, err := o.w.Write([]byte("event: " + typ + "\ndata: " + string(b) + "\n\n")); err != nil {
		o.failed = true
		return
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (o *respOut) index() int { return len(o.items) - 1 }
func (o *respOut) item() map[string]any {
	return o.items[len(o.items)-1]
}

// begin opens an output item.
func (o *respOut) begin(item map[string]any) {
	o.close()
	o.items = append(o.items, item)
	o.open = item["type"].(string)
	o.event("response.output_item.added", map[string]any{"output_index": o.index(), "item": item})
	switch o.open { // the part the deltas go to (clients' accumulators need it)
	case "message":
		o.event("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": o.index(), "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	case "reasoning":
		o.event("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": o.index(), "content_index": 0,
			"part": map[string]any{"type": "reasoning_text", "text": ""}})
	}
}

// close finishes the open item.
func (o *respOut) close() {
	if o.open == "" {
		return
	}
	it, i := o.item(), o.index()
	switch o.open {
	case "reasoning":
		text := o.reasoning.String()
		part := map[string]any{"type": "reasoning_text", "text": text}
		o.event("response.reasoning_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": text})
		o.event("response.content_part.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "part": part})
		it["content"] = []any{part}
		o.reasoning.Reset()
	case "message":
		text := o.text.String()
		part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
		o.event("response.output_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": text,
			"logprobs": []any{}})
		o.event("response.content_part.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "part": part})
		it["content"], it["status"] = []any{part}, "completed"
		o.text.Reset()
	case "function_call":
		o.event("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i,
			"name": it["name"], "arguments": it["arguments"]})
		it["status"] = "completed"
	case "custom_tool_call": // its input is the one string argument, whole
		var args struct {
			Input string `json:"input"`
		}
		_ = json.Unmarshal([]byte(o.args[i]), &args)
		it["input"], it["status"] = args.Input, "completed"
		o.event("response.custom_tool_call_input.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": args.Input})
		o.event("response.custom_tool_call_input.done", map[string]any{"item_id": it["id"], "output_index": i, "input": args.Input})
	}
	o.event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	o.open = ""
}

// take adds an event's pieces to the output.
func (o *respOut) take(ev ipc.Event) {
	if ev.Reasoning != "" {
		if ev.Text == "" {
			o.reasonTok += len(ev.Tokens)
		}
		if o.open != "reasoning" {
			o.begin(map[string]any{"type": "reasoning", "id": "rs_" + ipc.RandomHex(24), "summary": []any{}})
		}
		o.reasoning.WriteString(ev.Reasoning)
		o.event("response.reasoning_text.delta", map[string]any{"item_id": o.item()["id"], "output_index": o.index(),
			"content_index": 0, "delta": ev.Reasoning})
	}
	if ev.Text != "" {
		if o.open != "message" {
			o.begin(map[string]any{"type": "message", "id": "msg_" + ipc.RandomHex(24), "status": "in_progress", "role": "assistant",
				"content": []any{}})
		}
		o.text.WriteString(ev.Text)
		o.event("response.output_text.delta", map[string]any{"item_id": o.item()["id"], "output_index": o.index(),
			"content_index": 0, "delta": ev.Text, "logprobs": []any{}})
	}
	for _, c := range ev.ToolCalls {
		if _, ok := o.calls[c.Index]; !ok {
			if o.calls == nil {
				o.calls, o.args = map[int]int{}, map[int]string{}
			}
			ref, ok := o.tools[c.Name]
			if !ok {
				ref.name = c.Name
			}
			var it map[string]any
			if ref.custom {
				it = map[string]any{"type": "custom_tool_call", "id": "ctc_" + ipc.RandomHex(24), "call_id": c.ID, "name": ref.name,
					"input": "", "status": "in_progress"}
			} else {
				it = map[string]any{"type": "function_call", "id": "fc_" + ipc.RandomHex(24), "call_id": c.ID, "name": ref.name,
					"arguments": "", "status": "in_progress"}
			}
			if ref.namespace != "" {
				it["namespace"] = ref.namespace
			}
			o.begin(it)
			o.calls[c.Index] = o.index()
		}
		if it := o.items[o.calls[c.Index]]; it["type"] == "custom_tool_call" {
			o.args[o.calls[c.Index]] += c.Arguments
			continue
		}
		it := o.items[o.calls[c.Index]]
		it["arguments"] = it["arguments"].(string) + c.Arguments
		if c.Arguments != "" {
			o.event("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": o.calls[c.Index],
				"delta": c.Arguments})
		}
	}
}

// run reads the stream to its end (always: nothing leaks), answering as it goes.
func (o *respOut) run(st ipc.RequestStream) {
	o.event("response.created", map[string]any{"response": o.obj})
	o.event("response.in_progress", map[string]any{"response": o.obj})
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			o.fail(&httpError{status: http.StatusInternalServerError, typ: "server_error", msg: err.Error()})
			return
		}
		o.take(ev)
		if ev.Done != nil {
			o.finish(ev.Done)
			return
		}
	}
}

// finish closes the output and answers with the whole response.
func (o *respOut) finish(d *wire.Done) {
	if herr := terminalError(d); herr != nil {
		o.fail(herr)
		return
	}
	o.close()
	out := make([]any, len(o.items))
	for i, it := range o.items {
		out[i] = it
	}
	status, event := "completed", "response.completed"
	if d.FinishReason == "length" {
		status, event = "incomplete", "response.incomplete"
		o.obj["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
	}
	o.obj["status"], o.obj["output"] = status, out
	o.obj["usage"] = map[string]any{"input_tokens": d.Usage.PromptTokens,
		"input_tokens_details":  map[string]int{"cached_tokens": d.Usage.CachedPromptTokens},
		"output_tokens":         d.Usage.CompletionTokens,
		"output_tokens_details": map[string]int{"reasoning_tokens": min(o.reasonTok, d.Usage.CompletionTokens)},
		"total_tokens":          d.Usage.PromptTokens + d.Usage.CompletionTokens}
	o.done = true
	if o.stream {
		o.event(event, map[string]any{"response": o.obj})
		return
	}
	writeJSON(o.w, http.StatusOK, o.obj)
}

// fail reports an error: a status before anything was written, a
// response.failed event after.
func (o *respOut) fail(herr *httpError) {
	if o.stream && o.seq > 0 {
		o.obj["status"], o.obj["error"] = "failed", map[string]string{"code": cmp.Or(herr.code, herr.typ), "message": herr.msg}
		o.event("response.failed", map[string]any{"response": o.obj})
		return
	}
	writeError(o.w, herr)
}

// assistant is the answer as a chat message, for a stored conversation.
func (o *respOut) assistant() map[string]any {
	m := map[string]any{"role": "assistant", "content": ""}
	var calls []map[string]any
	for _, it := range o.items {
		switch it["type"] {
		case "reasoning":
			if c, ok := it["content"].([]any); ok && len(c) > 0 {
				m["reasoning_content"] = c[0].(map[string]any)["text"]
			}
		case "message":
			if c, ok := it["content"].([]any); ok && len(c) > 0 {
				m["content"] = m["content"].(string) + c[0].(map[string]any)["text"].(string)
			}
		case "function_call":
			calls = append(calls, map[string]any{"id": it["call_id"], "type": "function",
				"function": map[string]any{"name": itemToolName(it), "arguments": it["arguments"]}})
		case "custom_tool_call":
			args, _ := json.Marshal(map[string]any{"input": it["input"]})
			calls = append(calls, map[string]any{"id": it["call_id"], "type": "function",
				"function": map[string]any{"name": itemToolName(it), "arguments": string(args)}})
		}
	}
	if len(calls) > 0 {
		m["tool_calls"] = calls
	}
	return m
}

// itemToolName is the name the model saw for a call item's tool.
func itemToolName(it map[string]any) string {
	ns, _ := it["namespace"].(string)
	name, _ := it["name"].(string)
	return modelName(ns, name)
}

// socketResponse is a response stored over the msgpack socket, as GET
// shows it: its answer (the conversation's last message) as output.
func socketResponse(id string, conv []byte) map[string]any {
	var msgs []struct {
		Content          string `json:"content"`
		ReasoningContent string `json:"reasoning_content"`
		ToolCalls        []struct {
			ID       string `json:"id"`
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	}
	var output []any
	if json.Unmarshal(conv, &msgs) == nil && len(msgs) > 0 {
		last := msgs[len(msgs)-1]
		if last.ReasoningContent != "" {
			output = append(output, map[string]any{"type": "reasoning", "id": "rs_" + ipc.RandomHex(24), "summary": []any{},
				"content": []any{map[string]string{"type": "reasoning_text", "text": last.ReasoningContent}}})
		}
		if last.Content != "" {
			output = append(output, map[string]any{"type": "message", "id": "msg_" + ipc.RandomHex(24), "status": "completed",
				"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": last.Content, "annotations": []any{}}}})
		}
		for _, c := range last.ToolCalls {
			output = append(output, map[string]any{"type": "function_call", "id": "fc_" + ipc.RandomHex(24), "call_id": c.ID,
				"name": c.Function.Name, "arguments": c.Function.Arguments, "status": "completed"})
		}
	}
	return map[string]any{"id": id, "object": "response", "status": "completed", "output": output, "store": true}
}
