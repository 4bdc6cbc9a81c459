package daemon

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/batchd/batchd/ipc/wire"
)

// encoding writes one value in one msgpack encoding.
type encoding struct {
	name string
	enc  func(e *msgpack.Encoder) error
}

func intEncodings(v int64) []encoding {
	var out []encoding
	add := func(name string, fits bool, f func(e *msgpack.Encoder) error) {
		if fits {
			out = append(out, encoding{name, f})
		}
	}
	add("fixint", v >= -32 && v <= 127, func(e *msgpack.Encoder) error { return e.EncodeInt(v) })
	add("uint8", v >= 0 && v <= math.MaxUint8, func(e *msgpack.Encoder) error { return e.EncodeUint8(uint8(v)) })
	add("uint16", v >= 0 && v <= math.MaxUint16, func(e *msgpack.Encoder) error { return e.EncodeUint16(uint16(v)) })
	add("uint32", v >= 0 && v <= math.MaxUint32, func(e *msgpack.Encoder) error { return e.EncodeUint32(uint32(v)) })
	add("uint64", v >= 0, func(e *msgpack.Encoder) error { return e.EncodeUint64(uint64(v)) })
	add("int8", v >= math.MinInt8 && v <= math.MaxInt8, func(e *msgpack.Encoder) error { return e.EncodeInt8(int8(v)) })
	add("int16", v >= math.MinInt16 && v <= math.MaxInt16, func(e *msgpack.Encoder) error { return e.EncodeInt16(int16(v)) })
	add("int32", v >= math.MinInt32 && v <= math.MaxInt32, func(e *msgpack.Encoder) error { return e.EncodeInt32(int32(v)) })
	add("int64", true, func(e *msgpack.Encoder) error { return e.EncodeInt64(v) })
	return out
}

func floatEncodings(v float64) []encoding {
	out := []encoding{
		{"float32", func(e *msgpack.Encoder) error { return e.EncodeFloat32(float32(v)) }},
		{"float64", func(e *msgpack.Encoder) error { return e.EncodeFloat64(v) }},
	}
	if v == math.Trunc(v) {
		out = append(out, intEncodings(int64(v))...)
	}
	return out
}

// submitFrame encodes a submit map with one field in a chosen encoding.
func submitFrame(t *testing.T, id uint64, field string, enc encoding) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.EncodeMapLen(5))
	must(e.EncodeString("type"))
	must(e.EncodeString("submit"))
	must(e.EncodeString("id"))
	must(e.EncodeUint64(id))
	must(e.EncodeString("prompt"))
	must(e.EncodeString("hi"))
	if field == "max_tokens" {
		must(e.EncodeString("seed"))
		must(e.EncodeInt(1))
	} else {
		must(e.EncodeString("max_tokens"))
		must(e.EncodeInt(2))
	}
	must(e.EncodeString(field))
	must(enc.enc(e))
	return append(binary.BigEndian.AppendUint32(nil, uint32(buf.Len())), buf.Bytes()...)
}

// TestSubmitFieldEncodings sends every numeric field of submit in every
// msgpack encoding of its value: all are accepted and served (float64
// temperatures were rejected with "invalid code=cb decoding float32"); a
// value that does not fit its field is an invalid_argument naming it (they
// wrapped silently: max_tokens 2^64-1 became -1).
func TestSubmitFieldEncodings(t *testing.T) {
	td := startSynthDaemon(t, "")
	c, err := net.Dial("unix", td.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(c)
	if err := wire.WriteFrame(c, &wire.Hello{Type: wire.TypeHello, ID: 1, Version: wire.ProtocolVersion}); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadFrame(br, wire.DefaultMaxFrame); err != nil {
		t.Fatal(err)
	}
	// outcome sends a frame and returns "done:<finish>" or "error:<code>:<message>".
	var id uint64 = 10
	outcome := func(frame []byte) string {
		t.Helper()
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		for {
			body, err := wire.ReadFrame(br, wire.DefaultMaxFrame)
			if err != nil {
				t.Fatal(err)
			}
			var f wire.Done
			if err := wire.Decode(body, &f); err != nil {
				t.Fatal(err)
			}
			switch f.Type {
			case wire.TypeDone:
				return "done:" + f.FinishReason
			case wire.TypeError:
				var e wire.ErrorFrame
				_ = wire.Decode(body, &e)
				return "error:" + e.Code + ":" + e.Message
			}
		}
	}
	valid := map[string][]encoding{
		"max_tokens": intEncodings(2), "top_k": intEncodings(40), "seed": intEncodings(7), "priority": intEncodings(3),
		"temperature": floatEncodings(0.8), "top_p": floatEncodings(0.9), "min_p": floatEncodings(0.05),
		"repetition_penalty": floatEncodings(1.1),
	}
	valid["max_tokens"] = append(valid["max_tokens"], intEncodings(200)...) // uint8 and up, not fixint
	valid["temperature"] = append(valid["temperature"], floatEncodings(1)...)
	valid["seed"] = append(valid["seed"], intEncodings(math.MaxInt64)...)
	valid["priority"] = append(valid["priority"], intEncodings(-5)...)
	valid["seed"] = append(valid["seed"], intEncodings(-1)...) // random, as over HTTP (llama.cpp's -1)
	for field, encs := range valid {
		for _, enc := range encs {
			id++
			if got := outcome(submitFrame(t, id, field, enc)); !strings.HasPrefix(got, "done:") {
				t.Errorf("%s as %s: %s", field, enc.name, got)
			}
		}
	}
	u64 := func(v uint64) encoding {
		return encoding{"uint64", func(e *msgpack.Encoder) error { return e.EncodeUint64(v) }}
	}
	i64 := func(v int64) encoding {
		return encoding{"int64", func(e *msgpack.Encoder) error { return e.EncodeInt64(v) }}
	}
	f64 := func(v float64) encoding {
		return encoding{"float64", func(e *msgpack.Encoder) error { return e.EncodeFloat64(v) }}
	}
	str := encoding{"str", func(e *msgpack.Encoder) error { return e.EncodeString("1") }}
	for _, tc := range []struct {
		field string
		enc   encoding
	}{
		{"max_tokens", u64(math.MaxUint64)}, {"seed", i64(-2)}, {"seed", u64(math.MaxUint64)}, {"priority", u64(math.MaxUint64)},
		{"top_k", u64(1 << 63)}, {"max_tokens", f64(2.5)}, {"temperature", str}, {"temperature", f64(-1)},
		{"temperature", f64(1e300)}, {"temperature", f64(math.Inf(1))}, {"temperature", f64(1e-40)},
		{"top_p", f64(math.NaN())},
	} {
		id++
		got := outcome(submitFrame(t, id, tc.field, tc.enc))
		if !strings.HasPrefix(got, "error:"+wire.CodeInvalidArgument+":") || !strings.Contains(got, tc.field) {
			t.Errorf("%s as %s: %s, want invalid_argument naming the field", tc.field, tc.enc.name, got)
		}
		if strings.Contains(got, "invalid argument:") {
			t.Errorf("%s: stuttered error %q", tc.field, got)
		}
	}
}
