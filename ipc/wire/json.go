package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/batchd/batchd/jsontext"
)

// JSON is a structured field (a chat's messages, its tools) carried as
// JSON text in Go and as the same structure in msgpack: maps keep their
// key order both ways, since chat templates print tool schemas as written.
type JSON []byte

var jsonType = reflect.TypeOf(JSON(nil))

// EncodeMsgpack writes the JSON text as msgpack; empty JSON writes nil.
func (j JSON) EncodeMsgpack(enc *msgpack.Encoder) error {
	if len(j) == 0 {
		return enc.EncodeNil()
	}
	v, err := jsontext.Parse(j)
	if err != nil {
		return fmt.Errorf("wire.JSON: %w", err)
	}
	return encodeValue(enc, v)
}

// encodeValue writes a JSON value as msgpack, its maps in order.
func encodeValue(enc *msgpack.Encoder, v jsontext.Value) error {
	switch v.Kind {
	case jsontext.Object:
		if err := enc.EncodeMapLen(len(v.Members)); err != nil {
			return err
		}
		for _, m := range v.Members {
			if err := enc.EncodeString(m.Key); err != nil {
				return err
			}
			if err := encodeValue(enc, m.Value); err != nil {
				return err
			}
		}
		return nil
	case jsontext.Array:
		if err := enc.EncodeArrayLen(len(v.Items)); err != nil {
			return err
		}
		for _, e := range v.Items {
			if err := encodeValue(enc, e); err != nil {
				return err
			}
		}
		return nil
	case jsontext.Number:
		n := json.Number(v.Text)
		if i, err := n.Int64(); err == nil {
			return enc.EncodeInt(i)
		}
		f, err := n.Float64()
		if err != nil {
			return err
		}
		return enc.EncodeFloat64(f)
	case jsontext.String:
		return enc.EncodeString(v.Text)
	case jsontext.Bool:
		return enc.EncodeBool(v.Bool)
	}
	return enc.EncodeNil()
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
	if depth > jsontext.MaxDepth {
		return fmt.Errorf("nested deeper than %d", jsontext.MaxDepth)
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
	var buf [64]byte
	w.Write(jsontext.AppendString(buf[:0], strings.ToValidUTF8(s, "\uFFFD")))
}

func isArrayCode(c byte) bool { return (c >= 0x90 && c <= 0x9f) || c == 0xdc || c == 0xdd }
func isMapCode(c byte) bool   { return (c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf }
