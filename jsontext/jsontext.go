// Package jsontext is the one place batchd reads JSON text in order and
// writes JSON strings: a request's messages, tools and schemas keep their
// objects' key order (chat templates print tool schemas as written, and a
// schema's properties come out in its order), every reader stops at the
// same depth, and every writer escapes a string the same way (as
// llama.cpp's nlohmann::json dumps it). It imports nothing of batchd's.
package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxDepth bounds the nesting of what a client sends, below the top
// value: no conversation, tool list or schema comes near it, and a deeper
// one is refused rather than walked.
const MaxDepth = 64

// Kind is a JSON value's type.
type Kind uint8

// The kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Value is a JSON value with its objects' members in order.
type Value struct {
	Kind Kind
	// Text is a string's text, or a number as written.
	Text    string
	Bool    bool
	Items   []Value  // an array's
	Members []Member // an object's, in order, a repeated key as often as it came
}

// Member is one of an object's members.
type Member struct {
	Key   string
	Value Value
}

// Parse reads one JSON value (numbers as written, at most MaxDepth deep);
// text after it is an error.
func Parse(data []byte) (Value, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := read(d, 0)
	if err != nil {
		return v, err
	}
	if _, err := d.Token(); err != io.EOF {
		return v, errors.New("text after the JSON value")
	}
	return v, nil
}

func read(d *json.Decoder, depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, fmt.Errorf("nested deeper than %d", MaxDepth)
	}
	t, err := d.Token()
	if err != nil {
		return Value{}, err
	}
	switch t := t.(type) {
	case json.Delim:
		v := Value{Kind: Array, Items: []Value{}}
		if t == '{' {
			v = Value{Kind: Object, Members: []Member{}}
		}
		for d.More() {
			var k string
			if v.Kind == Object {
				kt, err := d.Token()
				if err != nil {
					return v, err
				}
				k = kt.(string)
			}
			x, err := read(d, depth+1)
			if err != nil {
				return v, err
			}
			if v.Kind == Object {
				v.Members = append(v.Members, Member{k, x})
			} else {
				v.Items = append(v.Items, x)
			}
		}
		_, err := d.Token()
		return v, err
	case json.Number:
		return Value{Kind: Number, Text: t.String()}, nil
	case string:
		return Value{Kind: String, Text: t}, nil
	case bool:
		return Value{Kind: Bool, Bool: t}, nil
	case nil:
		return Value{Kind: Null}, nil
	}
	return Value{}, fmt.Errorf("unexpected %v", t)
}

// Get is an object's last member named k (a repeated key's last value
// wins, as encoding/json and nlohmann decide).
func (v Value) Get(k string) (Value, bool) {
	for i := len(v.Members) - 1; i >= 0; i-- {
		if v.Members[i].Key == k {
			return v.Members[i].Value, true
		}
	}
	return Value{}, false
}

// AppendString appends s as a JSON string literal, escaped as nlohmann's
// dump escapes: the quote, the backslash and control characters, nothing
// else (no \u escapes for <, > or &, and UTF-8 as it is). It works byte by
// byte, so a character that arrives one byte at a time escapes the same.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	return append(AppendEscaped(b, s), '"')
}

// AppendEscaped appends s escaped as in a JSON string, without the quotes.
func AppendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return b
}

const hex = "0123456789abcdef"

// Quote is s as a JSON string literal (AppendString's).
func Quote(s string) string { return string(AppendString(nil, s)) }

// WriteString writes s to b as a JSON string literal (AppendString's).
func WriteString(b *strings.Builder, s string) {
	var buf [64]byte
	b.Write(AppendString(buf[:0], s))
}

// Append appends v as compact JSON text: members in order, strings
// escaped as AppendString, numbers as written.
func Append(b []byte, v Value) []byte {
	switch v.Kind {
	case Null:
		return append(b, "null"...)
	case Bool:
		if v.Bool {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Number:
		return append(b, v.Text...)
	case String:
		return AppendString(b, v.Text)
	case Array:
		b = append(b, '[')
		for i, x := range v.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = Append(b, x)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, m := range v.Members {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, m.Key)
		b = append(b, ':')
		b = Append(b, m.Value)
	}
	return append(b, '}')
}
