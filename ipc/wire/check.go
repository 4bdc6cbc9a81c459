package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/batchd/batchd/jsontext"
)

// checkBody walks one msgpack value and checks that every declared length
// (string, binary, extension, array, map) fits in the bytes that remain, so
// that decoding a frame allocates no more than the frame's own size: a
// 9-byte frame must not make the server reserve megabytes.
//
// It also bounds nesting (MaxDepth), here, before anything decodes the
// frame: msgpack's decoder and ours recurse, and a frame of a million
// one-byte arrays cost half a gigabyte of stack and heap before a later
// check refused it.
func checkBody(b []byte) error {
	off, pending := 0, uint64(1) // values still to read
	left := func() uint64 { return uint64(len(b) - off) }
	// open holds, per container being read, how many of its values are
	// still to come; its length is the nesting depth.
	open := make([]uint64, 0, 8)
	for pending > 0 {
		if off >= len(b) {
			return fmt.Errorf("truncated msgpack value at byte %d", off)
		}
		c := b[off]
		off++
		pending--
		for len(open) > 0 && open[len(open)-1] == 0 {
			open = open[:len(open)-1]
		}
		if len(open) > 0 {
			open[len(open)-1]--
		}
		h, ok := headerOf(c)
		if !ok {
			return fmt.Errorf("invalid msgpack byte %#x at %d", c, off-1)
		}
		n := h.size
		if h.lenWidth > 0 {
			if uint64(h.lenWidth) > left() {
				return fmt.Errorf("declared length at byte %d exceeds the %d bytes left", off, left())
			}
			switch h.lenWidth {
			case 1:
				n = uint64(b[off])
			case 2:
				n = uint64(binary.BigEndian.Uint16(b[off:]))
			case 4:
				n = uint64(binary.BigEndian.Uint32(b[off:]))
			}
			off += h.lenWidth
		}
		size, items := n+h.extra, h.items
		if h.perItem > 0 { // an array or map: n counts values, not bytes
			size, items = 0, n*h.perItem
		}
		if size > left() {
			return fmt.Errorf("declared length %d at byte %d exceeds the %d bytes left", size, off, left())
		}
		off += int(size)
		if items > left() { // every value takes at least a byte
			return fmt.Errorf("declared %d values at byte %d exceed the %d bytes left", items, off, left())
		}
		pending += items
		if items > 0 {
			if len(open) >= MaxDepth {
				return fmt.Errorf("msgpack values nested deeper than %d at byte %d", MaxDepth, off)
			}
			open = append(open, items)
		}
	}
	if off != len(b) {
		return fmt.Errorf("%d bytes after the msgpack value", len(b)-off)
	}
	return nil
}

// MaxDepth is the deepest nesting of arrays and maps a frame may hold:
// the JSON a frame carries (a schema, messages, tools) may nest
// jsontext.MaxDepth levels, below a few of the frame's own.
const MaxDepth = jsontext.MaxDepth + 8

// header is what a msgpack type byte says of the value it starts.
type header struct {
	size     uint64 // payload bytes when fixed
	items    uint64 // nested values when fixed (fixarray, fixmap)
	lenWidth int    // bytes of a length field that follows
	perItem  uint64 // for arrays (1) and maps (2): the length counts values
	extra    uint64 // bytes besides the length's (an extension's type byte)
}

func headerOf(c byte) (header, bool) {
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return header{}, true
	case c >= 0x80 && c <= 0x8f:
		return header{items: 2 * uint64(c&0x0f)}, true
	case c >= 0x90 && c <= 0x9f:
		return header{items: uint64(c & 0x0f)}, true
	case c >= 0xa0 && c <= 0xbf:
		return header{size: uint64(c & 0x1f)}, true
	case c == 0xc4 || c == 0xd9:
		return header{lenWidth: 1}, true
	case c == 0xc5 || c == 0xda:
		return header{lenWidth: 2}, true
	case c == 0xc6 || c == 0xdb:
		return header{lenWidth: 4}, true
	case c >= 0xc7 && c <= 0xc9:
		return header{lenWidth: 1 << (c - 0xc7), extra: 1}, true
	case c == 0xca:
		return header{size: 4}, true
	case c == 0xcb:
		return header{size: 8}, true
	case c >= 0xcc && c <= 0xcf:
		return header{size: 1 << (c - 0xcc)}, true
	case c >= 0xd0 && c <= 0xd3:
		return header{size: 1 << (c - 0xd0)}, true
	case c >= 0xd4 && c <= 0xd8:
		return header{size: 1 + 1<<(c-0xd4)}, true
	case c == 0xdc || c == 0xdd:
		return header{lenWidth: 2 << (c - 0xdc), perItem: 1}, true
	case c == 0xde || c == 0xdf:
		return header{lenWidth: 2 << (c - 0xde), perItem: 2}, true
	}
	return header{}, false
}
