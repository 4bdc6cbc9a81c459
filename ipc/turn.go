package ipc

import (
	"encoding/json"
	"strings"

	"github.com/batchd/batchd/ipc/wire"
)

// turn is a submit that continues a stored response or is to be stored:
// the conversation through its messages, and its answer as it arrives.
type turn struct {
	store           *ResponseStore
	uid             uint32
	conv            []json.RawMessage
	keep            bool
	text, reasoning strings.Builder
}

// turnOf joins a submit's messages to the stored conversation it
// continues (m.Messages then holds the whole), or returns nil for a
// submit that neither continues nor is stored.
func turnOf(store *ResponseStore, uid uint32, m *wire.Submit) (*turn, error) {
	if m.PreviousResponseID == "" && !m.Store {
		return nil, nil
	}
	switch {
	case store == nil || store.Off():
		return nil, wire.Errorf(wire.CodeUnavailable, "this server keeps no responses (server.responses_store_mb)")
	case len(m.Messages) == 0:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "previous_response_id and store need messages (a chat)")
	}
	t := &turn{store: store, uid: uid, keep: m.Store}
	if m.PreviousResponseID != "" {
		prev, ok := store.Get(uid, m.PreviousResponseID)
		if !ok || json.Unmarshal(prev.Messages, &t.conv) != nil {
			return nil, ErrResponseNotFound(m.PreviousResponseID)
		}
	}
	var now []json.RawMessage
	if err := json.Unmarshal(m.Messages, &now); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "messages: want an array of messages: %v", err)
	}
	t.conv = append(t.conv, now...)
	b, err := json.Marshal(t.conv)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "messages: %v", err)
	}
	m.Messages = b
	return t, nil
}

// add takes an event's answer.
func (t *turn) add(ev Event) {
	t.text.WriteString(ev.Text)
	t.reasoning.WriteString(ev.Reasoning)
}

// done stores the conversation with its answer, naming it in d, when the
// submit asked and the answer ended well (not cancelled, not failed).
func (t *turn) done(d *wire.Done) {
	switch {
	case !t.keep:
		return
	case d.FinishReason != "stop" && d.FinishReason != "length" && d.FinishReason != "tool_calls":
		return
	}
	answer := map[string]any{"role": "assistant", "content": t.text.String()}
	if r := t.reasoning.String(); r != "" {
		answer["reasoning_content"] = r
	}
	var calls []map[string]any
	for _, c := range d.ToolCalls {
		calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": c.Arguments}})
	}
	if calls != nil {
		answer["tool_calls"] = calls
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return
	}
	conv, err := json.Marshal(append(t.conv, b))
	if err != nil {
		return
	}
	d.ResponseID = NewResponseID()
	t.store.Put(t.uid, d.ResponseID, StoredResponse{Messages: conv})
}
