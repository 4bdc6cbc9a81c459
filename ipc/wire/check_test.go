package wire

import (
	"bytes"
	"testing"
)

func TestCheckBody(t *testing.T) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, &Submit{Type: TypeSubmit, ID: 3, Prompt: "héllo", Tokens: []int{1, 300, 70000, -5},
		Temperature: 0.5, Stop: []string{"a", ""}, Seed: 1 << 40, Stream: true})
	if err := checkBody(buf.Bytes()[4:]); err != nil {
		t.Fatalf("valid frame rejected: %v", err)
	}
	for name, b := range map[string][]byte{
		"str32 of 4 GB":    []byte("\x88\xdb\xf0\xb7\\\xdd\x00\xe7\v"),
		"array32 huge":     {0x81, 0xa1, 'x', 0xdd, 0x7f, 0xff, 0xff, 0xff},
		"map16 huge":       {0xde, 0xff, 0xff},
		"truncated":        {0x82, 0xa1, 'a'},
		"trailing":         {0xc0, 0xc0},
		"reserved byte":    {0xc1},
		"bin8 past end":    {0xc4, 0x09, 1, 2},
		"nested truncated": {0x91, 0x91, 0x91},
	} {
		if checkBody(b) == nil {
			t.Errorf("%s: accepted %q", name, b)
		}
	}
}
