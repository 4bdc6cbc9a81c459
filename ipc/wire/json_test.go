package wire

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestJSONFieldsKeepKeyOrder: messages and tools cross the socket with
// their maps in the order written, both from Go and from a msgpack map that
// another client (Python) wrote.
func TestJSONFieldsKeepKeyOrder(t *testing.T) {
	msgs := `[{"role":"user","content":[{"type":"text","text":"hi <b>&"}],"z":1,"a":2.5,"n":null,"t":true}]`
	tools := `[{"type":"function","function":{"name":"f","parameters":{"type":"object","required":["b","a"]}}}]`
	var buf bytes.Buffer
	no := false
	if err := WriteFrame(&buf, &Submit{Type: TypeSubmit, ID: 1, Messages: JSON(msgs), Tools: JSON(tools), AddGenerationPrompt: &no}); err != nil {
		t.Fatal(err)
	}
	body, err := ReadFrame(bufio.NewReader(&buf), DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	var s Submit
	if err := Decode(body, &s); err != nil {
		t.Fatal(err)
	}
	// The text comes back as written: strings escaped as jsontext escapes
	// them (no \u003c for <), so the round trip is exact.
	if string(s.Messages) != msgs || string(s.Tools) != tools {
		t.Errorf("got\n%s\n%s", s.Messages, s.Tools)
	}
	if s.AddGenerationPrompt == nil || *s.AddGenerationPrompt {
		t.Errorf("add_generation_prompt = %v", s.AddGenerationPrompt)
	}
	// A whole float stays a float; a non-string key is refused by name.
	var raw bytes.Buffer
	enc := msgpack.NewEncoder(&raw)
	_ = enc.EncodeMapLen(2)
	_ = enc.EncodeString("type")
	_ = enc.EncodeString("submit")
	_ = enc.EncodeString("messages")
	_ = enc.EncodeArrayLen(1)
	_ = enc.EncodeMapLen(1)
	_ = enc.EncodeString("w")
	_ = enc.EncodeFloat64(2)
	s = Submit{}
	if err := Decode(raw.Bytes(), &s); err != nil || string(s.Messages) != `[{"w":2.0}]` {
		t.Errorf("float: %s, %v", s.Messages, err)
	}
	raw.Reset()
	_ = enc.EncodeMapLen(1)
	_ = enc.EncodeString("messages")
	_ = enc.EncodeMapLen(1)
	_ = enc.EncodeInt(7)
	_ = enc.EncodeString("x")
	if err := Decode(raw.Bytes(), &s); err == nil {
		t.Error("an integer map key was accepted")
	}
	// Deep nesting is refused, not recursed into.
	raw.Reset()
	_ = enc.EncodeMapLen(1)
	_ = enc.EncodeString("tools")
	for range 200 {
		_ = enc.EncodeArrayLen(1)
	}
	_ = enc.EncodeNil()
	if err := Decode(raw.Bytes(), &s); err == nil {
		t.Error("200 levels of nesting were accepted")
	}
}
