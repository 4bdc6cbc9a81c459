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

// TestDeepNestingIsRefusedBeforeDecoding: a submit whose json_schema (or
// messages) is a million nested one-element arrays is refused by the
// shape check, in bytes proportional to its depth bound, before any
// recursive decoder sees it (each such frame cost ~480 MB, and a 3 MB one
// overflowed the stack); nesting at the bound still decodes.
func TestDeepNestingIsRefusedBeforeDecoding(t *testing.T) {
	nested := func(n int) []byte {
		b := []byte{0x83, 0xa4, 't', 'y', 'p', 'e', 0xa6, 's', 'u', 'b', 'm', 'i', 't', 0xa2, 'i', 'd', 0x01,
			0xab, 'j', 's', 'o', 'n', '_', 's', 'c', 'h', 'e', 'm', 'a'}
		b = append(b, bytes.Repeat([]byte{0x91}, n)...)
		return append(b, 0xc0)
	}
	deep := nested(3_000_000)
	var err error
	allocs := testing.AllocsPerRun(1, func() { _, err = DecodeHeader(deep) })
	if err == nil {
		t.Fatal("a frame nested 3,000,000 deep was accepted")
	}
	if allocs > 20 {
		t.Errorf("refusing it took %v allocations", allocs)
	}
	if _, err := DecodeHeader(nested(MaxDepth - 1)); err != nil {
		t.Fatalf("nesting within the bound: %v", err)
	}
	if _, err := DecodeHeader(nested(MaxDepth + 1)); err == nil {
		t.Fatal("nesting past the bound was accepted")
	}
}
