package wire

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Decode decodes a frame body (a msgpack map) into v, a pointer to one of
// this package's message structs. Unknown keys are ignored and nil leaves a
// field at its zero value.
//
// Every numeric field accepts every msgpack encoding of its value: a float
// field takes float32, float64 or any integer; an integer field takes any
// integer encoding whose value fits its Go type. A value that does not fit
// (max_tokens 2^64-1, seed 2^64-1) is an invalid_argument *Error naming the
// field, never a silent wrap. msgpack's own struct decoding rejects float64
// for a float32 field and wraps out-of-range integers, which is why frames
// go through a generic map first.
func Decode(body []byte, v any) error {
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	dec.UseLooseInterfaceDecoding(true) // integers as int64/uint64, floats as float64
	m, err := dec.DecodeMap()
	if err != nil {
		return Errorf(CodeInvalidArgument, "frame is not a msgpack map: %v", err)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("ipc.Decode: want a pointer to a struct, got %T", v)
	}
	if err := assignStruct(rv.Elem(), m, ""); err != nil {
		return err
	}
	if hasJSONFields(rv.Elem().Type()) {
		return decodeJSONFields(rv.Elem(), body)
	}
	return nil
}

// hasJSONFields reports whether a struct has fields of type JSON, which a
// second pass fills in their map order.
func hasJSONFields(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).Type == jsonType {
			return true
		}
	}
	return false
}

// fieldIndex maps a struct type's msgpack names to field indexes.
var fieldIndex sync.Map // reflect.Type -> map[string]int

func fieldsOf(t reflect.Type) map[string]int {
	if f, ok := fieldIndex.Load(t); ok {
		return f.(map[string]int)
	}
	out := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = i
	}
	fieldIndex.Store(t, out)
	return out
}

func assignStruct(dst reflect.Value, m map[string]any, prefix string) error {
	fields := fieldsOf(dst.Type())
	for k, val := range m {
		i, ok := fields[k]
		if !ok || val == nil || dst.Field(i).Type() == jsonType {
			continue
		}
		if err := assign(dst.Field(i), val, prefix+k); err != nil {
			return err
		}
	}
	return nil
}

// assign stores val (as the loose interface decoding gives it) in dst.
func assign(dst reflect.Value, val any, name string) error {
	bad := func(want string) error {
		return Errorf(CodeInvalidArgument, "%s: got %s, want %s", name, describe(val), want)
	}
	switch dst.Kind() {
	case reflect.String:
		s, ok := val.(string)
		if !ok {
			return bad("a string")
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := val.(bool)
		if !ok {
			return bad("a boolean")
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return assignInt(dst, val, bad)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return assignUint(dst, val, bad)
	case reflect.Float32, reflect.Float64:
		return assignFloat(dst, val, bad)
	case reflect.Slice:
		if dst.Type().Elem().Kind() == reflect.Uint8 { // bytes: msgpack bin (or str)
			switch b := val.(type) {
			case []byte:
				dst.SetBytes(append([]byte(nil), b...))
				return nil
			case string:
				dst.SetBytes([]byte(b))
				return nil
			}
		}
		list, ok := val.([]any)
		if !ok {
			return bad("an array")
		}
		out := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, e := range list {
			if e == nil {
				continue
			}
			if err := assign(out.Index(i), e, fmt.Sprintf("%s[%d]", name, i)); err != nil {
				return err
			}
		}
		dst.Set(out)
	case reflect.Map:
		mv, ok := val.(map[string]any)
		if !ok {
			return bad("a map")
		}
		return assignMap(dst, mv, name)
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		return assign(dst.Elem(), val, name)
	case reflect.Struct:
		mv, ok := val.(map[string]any)
		if !ok {
			return bad("a map")
		}
		return assignStruct(dst, mv, name+".")
	default:
		return fmt.Errorf("ipc.Decode: field %s of kind %s", name, dst.Kind())
	}
	return nil
}

func assignInt(dst reflect.Value, val any, bad func(string) error) error {
	bits := dst.Type().Bits()
	lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
	switch n := val.(type) {
	case int64:
		if n < lo || n > hi {
			return bad(fmt.Sprintf("an integer in [%d, %d]", lo, hi))
		}
		dst.SetInt(n)
	case uint64:
		if n > uint64(hi) {
			return bad(fmt.Sprintf("an integer in [%d, %d]", lo, hi))
		}
		dst.SetInt(int64(n))
	default:
		return bad("an integer")
	}
	return nil
}

func assignUint(dst reflect.Value, val any, bad func(string) error) error {
	hi := uint64(math.MaxUint64) >> (64 - dst.Type().Bits())
	switch n := val.(type) {
	case int64:
		if n < 0 || uint64(n) > hi {
			return bad(fmt.Sprintf("an integer in [0, %d]", hi))
		}
		dst.SetUint(uint64(n))
	case uint64:
		if n > hi {
			return bad(fmt.Sprintf("an integer in [0, %d]", hi))
		}
		dst.SetUint(n)
	default:
		return bad("a non-negative integer")
	}
	return nil
}

// assignFloat takes a float or any integer; a float32 field refuses a
// finite value beyond float32's range rather than turning it into Inf.
func assignFloat(dst reflect.Value, val any, bad func(string) error) error {
	var f float64
	switch n := val.(type) {
	case float64:
		f = n
	case int64:
		f = float64(n)
	case uint64:
		f = float64(n)
	default:
		return bad("a number")
	}
	if dst.Kind() == reflect.Float32 && !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
		return bad("a number within float32's range")
	}
	dst.SetFloat(f)
	return nil
}

// assignMap fills a map field: map[string]any as decoded, or typed values.
func assignMap(dst reflect.Value, mv map[string]any, name string) error {
	if dst.Type() == reflect.TypeOf(mv) {
		dst.Set(reflect.ValueOf(mv))
		return nil
	}
	if dst.Type().Key().Kind() != reflect.String {
		return fmt.Errorf("wire.Decode: field %s: map key %s", name, dst.Type().Key())
	}
	out := reflect.MakeMapWithSize(dst.Type(), len(mv))
	for k, v := range mv {
		e := reflect.New(dst.Type().Elem()).Elem()
		if v != nil {
			if err := assign(e, v, name+"."+k); err != nil {
				return err
			}
		}
		out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), e)
	}
	dst.Set(out)
	return nil
}

// describe names a decoded value's kind (and a number's value) for errors.
func describe(v any) string {
	switch x := v.(type) {
	case int64, uint64, float64:
		return fmt.Sprintf("%v", x)
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}
