package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Limits on what a conversation may hold.
const (
	maxDepth    = 64   // JSON nesting in messages and tools
	MaxMessages = 4096 // messages in one conversation
)

// parseJSON turns JSON text into a template value, keeping the key order
// of objects (templates print schemas with tojson, and Python keeps it).
func parseJSON(data []byte) (jinja.Value, error) { return parseShielded(data, nil) }

// parseShielded is parseJSON with every string shielded (shield.go).
func parseShielded(data []byte, sh *shield) (jinja.Value, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0, sh)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := d.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int, sh *shield) (jinja.Value, error) {
	if depth > maxDepth {
		return jinja.Undefined(), fmt.Errorf("nested deeper than %d", maxDepth)
	}
	t, err := d.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '[':
			items := []jinja.Value{}
			for d.More() {
				v, err := decodeValue(d, depth+1, sh)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := d.Token()
			return jinja.NewList(items), err
		case '{':
			obj := jinja.NewDict()
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeValue(d, depth+1, sh)
				if err != nil {
					return jinja.Undefined(), err
				}
				obj.AsDict().Set(sh.apply(k.(string)), v) // keys are the client's text too
			}
			_, err := d.Token()
			return obj, err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected %v", t)
	case json.Number:
		return jinja.FromGoValue(t), nil
	case string:
		return jinja.NewString(sh.apply(t)), nil
	default: // nil, bool
		return jinja.FromGoValue(t), nil
	}
}

// conversation checks messages as an OpenAI-style array and returns the
// messages a template gets: content parts joined into one string unless the
// template iterates them itself (as llama.cpp does).
func conversation(data []byte, typedContent bool, sh *shield) (jinja.Value, error) {
	v, err := parseShielded(data, sh)
	if err != nil {
		return v, fmt.Errorf("%w: messages: %v", ErrInvalidMessages, err)
	}
	if !v.IsList() {
		return v, fmt.Errorf("%w: messages: want an array", ErrInvalidMessages)
	}
	msgs := v.AsList().Items
	if len(msgs) == 0 {
		return v, fmt.Errorf("%w: messages: the array is empty", ErrInvalidMessages)
	}
	if len(msgs) > MaxMessages {
		return v, fmt.Errorf("%w: %d messages: at most %d", ErrInvalidMessages, len(msgs), MaxMessages)
	}
	for i, m := range msgs {
		if err := checkMessage(m, typedContent); err != nil {
			return v, fmt.Errorf("%w: messages[%d]: %v", ErrInvalidMessages, i, err)
		}
	}
	return v, nil
}

func checkMessage(m jinja.Value, typedContent bool) error {
	if !m.IsDict() {
		return errors.New("want an object")
	}
	d := m.AsDict()
	role, ok := d.Get("role")
	if !ok || !role.IsString() || role.AsString() == "" {
		return errors.New(`want a "role" string`)
	}
	content, ok := d.Get("content")
	switch {
	case !ok || content.IsNone() || content.IsString():
		return nil
	case !content.IsList():
		return errors.New(`"content": want a string, an array of parts or null`)
	}
	var texts []string
	for j, p := range content.AsList().Items {
		var typ, text jinja.Value
		if p.IsDict() {
			typ, _ = p.AsDict().Get("type")
			text, _ = p.AsDict().Get("text")
		}
		if !typ.IsString() {
			return fmt.Errorf(`content[%d]: want a part with a "type"`, j)
		}
		if typ.AsString() != "text" {
			return fmt.Errorf("content[%d]: a part of type %q: this model takes text only", j, typ.AsString())
		}
		if !text.IsString() {
			return fmt.Errorf(`content[%d]: want a "text" string`, j)
		}
		texts = append(texts, text.AsString())
	}
	if !typedContent {
		d.Set("content", jinja.NewString(strings.Join(texts, "\n")))
	}
	return nil
}
