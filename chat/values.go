package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"

	"github.com/batchd/batchd/jsontext"
)

// MaxMessages bounds the messages of one conversation (their nesting is
// jsontext's bound).
const MaxMessages = 4096

// parseJSON turns JSON text into a template value, keeping the key order
// of objects (templates print schemas with tojson, and Python keeps it).
func parseJSON(data []byte) (jinja.Value, error) { return parseShielded(data, nil) }

// parseShielded is parseJSON with every string shielded (shield.go).
func parseShielded(data []byte, sh *shield) (jinja.Value, error) {
	v, err := jsontext.Parse(data)
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinjaValue(v, sh), nil
}

// jinjaValue is a JSON value as a template's: objects in their key order
// (a repeated key's last value wins), numbers as Go reads them.
func jinjaValue(v jsontext.Value, sh *shield) jinja.Value {
	switch v.Kind {
	case jsontext.Array:
		items := make([]jinja.Value, len(v.Items))
		for i, x := range v.Items {
			items[i] = jinjaValue(x, sh)
		}
		return jinja.NewList(items)
	case jsontext.Object:
		obj := jinja.NewDict()
		for _, m := range v.Members {
			obj.AsDict().Set(sh.apply(m.Key), jinjaValue(m.Value, sh)) // keys are the client's text too
		}
		return obj
	case jsontext.Number:
		return jinja.FromGoValue(json.Number(v.Text))
	case jsontext.String:
		return jinja.NewString(sh.apply(v.Text))
	case jsontext.Bool:
		return jinja.FromGoValue(v.Bool)
	}
	return jinja.FromGoValue(nil)
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
