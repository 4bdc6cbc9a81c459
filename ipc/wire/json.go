package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// JSON is a structured field (a chat's messages, its tools) carried as
// JSON text in Go and as the same structure in msgpack: maps keep their
// key order both ways, since chat templates print tool schemas as written.
type JSON []byte

// maxJSONDepth bounds nesting; no conversation or schema comes near it.
const maxJSONDepth = 64

var jsonType = reflect.TypeOf(JSON(nil))

// EncodeMsgpack writes the JSON text as msgpack; empty JSON writes nil.
func (j JSON) EncodeMsgpack(enc *msgpack.Encoder) error {
	if len(j) == 0 {
		return enc.EncodeNil()
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	v, err := readOrdered(d, 0)
	if err != nil {
		return fmt.Errorf("wire.JSON: %w", err)
	}
	return v.encode(enc)
}

// ordered is a JSON value with its object keys in order.
type ordered struct {
	v    any // nil, bool, string, json.Number; or nil for a container
	list []ordered
	keys []string
	obj  bool
	arr  bool
}

func readOrdered(d *json.Decoder, depth int) (ordered, error) {
	if depth > maxJSONDepth {
		return ordered{}, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	t, err := d.Token()
	if err != nil {
		return ordered{}, err
	}
	delim, ok := t.(json.Delim)
	if !ok {
		return ordered{v: t}, nil
	}
	o := ordered{obj: delim == '{', arr: delim == '['}
	for d.More() {
		if o.obj {
			k, err := d.Token()
			if err != nil {
				return o, err
			}
			o.keys = append(o.keys, k.(string))
		}
		e, err := readOrdered(d, depth+1)
		if err != nil {
			return o, err
		}
		o.list = append(o.list, e)
	}
	_, err = d.Token()
	return o, err
}

func (o ordered) encode(enc *msgpack.Encoder) error {
	switch {
	case o.obj:
		if err := enc.EncodeMapLen(len(o.keys)); err != nil {
			return err
		}
		for i, k := range o.keys {
			if err := enc.EncodeString(k); err != nil {
				return err
			}
			if err := o.list[i].encode(enc); err != nil {
				return err
			}
		}
		return nil
	case o.arr:
		if err := enc.EncodeArrayLen(len(o.list)); err != nil {
			return err
		}
		for _, e := range o.list {
			if err := e.encode(enc); err != nil {
				return err
			}
		}
		return nil
	}
	switch v := o.v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return enc.EncodeInt(i)
		}
		f, err := v.Float64()
		if err != nil {
			return err
		}
		return enc.EncodeFloat64(f)
	default:
		return enc.Encode(v)
	}
}

// decodeJSONFields fills the JSON fields of dst from the frame body,
// transcoding each value to JSON text in its msgpack order.
func decodeJSONFields(dst reflect.Value, body []byte) error {
	fields := fieldsOf(dst.Type())
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	n, err := dec.DecodeMapLen()
	if err != nil {
		return Errorf(CodeInvalidArgument, "frame is not a msgpack map: %v", err)
	}
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			return Errorf(CodeInvalidArgument, "frame key: %v", err)
		}
		i, ok := fields[key]
		if !ok || dst.Field(i).Type() != jsonType {
			if err := dec.Skip(); err != nil {
				return Errorf(CodeInvalidArgument, "%s: %v", key, err)
			}
			continue
		}
		var buf bytes.Buffer
		if err := transcode(dec, &buf, 0); err != nil {
			return Errorf(CodeInvalidArgument, "%s: %v", key, err)
		}
		if buf.String() != "null" {
			dst.Field(i).SetBytes(buf.Bytes())
		}
	}
	return nil
}

// transcode writes the next msgpack value as JSON.
func transcode(dec *msgpack.Decoder, w *bytes.Buffer, depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	code, err := dec.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case code == 0xc0:
		w.WriteString("null")
		return dec.Skip()
	case isArrayCode(code):
		n, err := dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		w.WriteByte('[')
		for i := range n {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := transcode(dec, w, depth+1); err != nil {
				return err
			}
		}
		w.WriteByte(']')
		return nil
	case isMapCode(code):
		n, err := dec.DecodeMapLen()
		if err != nil {
			return err
		}
		w.WriteByte('{')
		for i := range n {
			if i > 0 {
				w.WriteByte(',')
			}
			k, err := dec.DecodeString()
			if err != nil {
				return errors.New("a map key that is not a string")
			}
			writeJSONString(w, k)
			w.WriteByte(':')
			if err := transcode(dec, w, depth+1); err != nil {
				return err
			}
		}
		w.WriteByte('}')
		return nil
	}
	v, err := dec.DecodeInterfaceLoose()
	if err != nil {
		return err
	}
	switch x := v.(type) {
	case string:
		writeJSONString(w, x)
	case bool:
		w.WriteString(strconv.FormatBool(x))
	case int64:
		w.WriteString(strconv.FormatInt(x, 10))
	case uint64:
		w.WriteString(strconv.FormatUint(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errors.New("NaN or Inf is not JSON")
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !bytes.ContainsAny([]byte(s), ".eE") {
			s += ".0" // stays a float on the far side
		}
		w.WriteString(s)
	default:
		return fmt.Errorf("a %T has no JSON form", v)
	}
	return nil
}

func writeJSONString(w *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // invalid UTF-8 becomes U+FFFD
	w.Write(b)
}

func isArrayCode(c byte) bool { return (c >= 0x90 && c <= 0x9f) || c == 0xdc || c == 0xdd }
func isMapCode(c byte) bool   { return (c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf }
