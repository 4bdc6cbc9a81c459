package grammar

import (
	"math"
	"strconv"
	"strings"

	"github.com/batchd/batchd/jsontext"
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

// parseValue decodes JSON text; a key given twice keeps its last value
// in its first place (as nlohmann's parser does).
func parseValue(data []byte) (value, error) {
	v, err := jsontext.Parse(data)
	if err != nil {
		return value{}, err
	}
	return valueOf(v), nil
}

func valueOf(t jsontext.Value) value {
	switch t.Kind {
	case jsontext.Array:
		v := value{kind: vArray, arr: make([]value, len(t.Items))}
		for i, x := range t.Items {
			v.arr[i] = valueOf(x)
		}
		return v
	case jsontext.Object:
		v := value{kind: vObject}
		at := map[string]int{}
		for _, m := range t.Members {
			if i, ok := at[m.Key]; ok {
				v.obj[i].val = valueOf(m.Value)
				continue
			}
			at[m.Key] = len(v.obj)
			v.obj = append(v.obj, member{m.Key, valueOf(m.Value)})
		}
		return v
	case jsontext.Number:
		return value{kind: vNumber, str: t.Text}
	case jsontext.String:
		return value{kind: vString, str: t.Text}
	case jsontext.Bool:
		return value{kind: vBool, b: t.Bool}
	}
	return value{kind: vNull}
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
		jsontext.WriteString(b, v.str)
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
			jsontext.WriteString(b, m.key)
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
