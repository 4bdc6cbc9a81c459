package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func body(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeHeaderIsStrict: an id that does not fit a uint64 or a type
// that is not a string is an invalid_argument error, other keys are
// skipped, and a key given twice is no panic (msgpack's struct decoder
// panics on a repeated key into an interface field: the fuzzer found it).
func TestDecodeHeaderIsStrict(t *testing.T) {
	h, err := DecodeHeader(body(t, map[string]any{"type": "token", "id": uint8(7), "text": "x", "tokens": []int{1, 2}}))
	if err != nil || h.Type != "token" || h.ID != 7 {
		t.Fatalf("%+v %v", h, err)
	}
	// {"type": "token", "type": "token"}, written by hand: a map cannot repeat a key.
	dup := []byte{0x82, 0xa4, 't', 'y', 'p', 'e', 0xa5, 't', 'o', 'k', 'e', 'n', 0xa4, 't', 'y', 'p', 'e', 0xa5, 't', 'o', 'k', 'e', 'n'}
	if h, err := DecodeHeader(dup); err != nil || h.Type != "token" {
		t.Fatalf("repeated key: %+v %v", h, err)
	}
	for _, m := range []map[string]any{{"type": "token", "id": -1}, {"type": "token", "id": 1.5}, {"type": 3, "id": 1}, {"id": 1}} {
		if _, err := DecodeHeader(body(t, m)); err == nil {
			t.Errorf("%v accepted", m)
		} else if len(m) == 2 && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%v: %v, want invalid_argument", m, err)
		}
	}
}

// BenchmarkTokenFrame is what a client spends on one streamed token frame.
func BenchmarkTokenFrame(b *testing.B) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, &Token{Type: TypeToken, ID: 3, Text: " once", Tokens: []int{403}}); err != nil {
		b.Fatal(err)
	}
	frame := buf.Bytes()[4:]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeHeader(frame); err != nil {
			b.Fatal(err)
		}
		var tk Token
		if err := Decode(frame, &tk); err != nil {
			b.Fatal(err)
		}
	}
}
