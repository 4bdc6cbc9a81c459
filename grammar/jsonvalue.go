package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// value is a JSON value that keeps its objects' key order (a schema's
// properties come out in the order written) and its numbers' text.
type value struct {
	kind valueKind
	str  string // a string, or a number's text
	b    bool
	arr  []value
	obj  []member
}

type valueKind uint8

const (
	vNull valueKind = iota
	vBool
	vNumber
	vString
	vArray
	vObject
)

type member struct {
	key string
	val value
}

// maxSchemaDepth bounds a schema's nesting.
const maxSchemaDepth = 64

// parseValue decodes JSON text; a key given twice keeps its last value.
func parseValue(data []byte) (value, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return v, err
	}
	if _, err := d.Token(); err != io.EOF {
		return v, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int) (value, error) {
	if depth > maxSchemaDepth {
		return value{}, fmt.Errorf("nested deeper than %d", maxSchemaDepth)
	}
	t, err := d.Token()
	if err != nil {
		return value{}, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '[':
			v := value{kind: vArray, arr: []value{}}
			for d.More() {
				x, err := decodeValue(d, depth+1)
				if err != nil {
					return v, err
				}
				v.arr = append(v.arr, x)
			}
			_, err := d.Token()
			return v, err
		case '{':
			v := value{kind: vObject}
			at := map[string]int{} // a repeated key's member: the last value wins, in its first place
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return v, err
				}
				x, err := decodeValue(d, depth+1)
				if err != nil {
					return v, err
				}
				if i, ok := at[k.(string)]; ok {
					v.obj[i].val = x
					continue
				}
				at[k.(string)] = len(v.obj)
				v.obj = append(v.obj, member{k.(string), x})
			}
			_, err := d.Token()
			return v, err
		}
	case json.Number:
		return value{kind: vNumber, str: t.String()}, nil
	case string:
		return value{kind: vString, str: t}, nil
	case bool:
		return value{kind: vBool, b: t}, nil
	case nil:
		return value{kind: vNull}, nil
	}
	return value{}, fmt.Errorf("unexpected %v", t)
}

func (v *value) set(k string, x value) {
	for i := range v.obj {
		if v.obj[i].key == k {
			v.obj[i].val = x
			return
		}
	}
	v.obj = append(v.obj, member{k, x})
}

// get returns an object's member.
func (v value) get(k string) (value, bool) {
	for _, m := range v.obj {
		if m.key == k {
			return m.val, true
		}
	}
	return value{}, false
}

func (v value) has(k string) bool { _, ok := v.get(k); return ok }

// int returns a number member as an integer (ok false when absent or not
// an integer).
func (v value) int(k string) (int64, bool) {
	x, ok := v.get(k)
	if !ok || x.kind != vNumber {
		return 0, false
	}
	if n, err := strconv.ParseInt(x.str, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(x.str, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// dump writes v as compact JSON, as llama.cpp's converter (nlohmann's
// dump) writes constants and property names: no spaces, non-ASCII as it is.
func (v value) dump() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v value) write(b *strings.Builder) {
	switch v.kind {
	case vNull:
		b.WriteString("null")
	case vBool:
		b.WriteString(strconv.FormatBool(v.b))
	case vNumber:
		b.WriteString(numberText(v.str))
	case vString:
		writeJSONString(b, v.str)
	case vArray:
		b.WriteByte('[')
		for i, x := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			x.write(b)
		}
		b.WriteByte(']')
	case vObject:
		b.WriteByte('{')
		for i, m := range v.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, m.key)
			b.WriteByte(':')
			m.val.write(b)
		}
		b.WriteByte('}')
	}
}

// numberText is a number as a JSON library that parsed it would write it:
// integers as written, others in their shortest form ("1.0" for 1).
func numberText(s string) string {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	out := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(out, ".eEn") {
		out += ".0"
	}
	return out
}

func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == utf8.RuneError {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
