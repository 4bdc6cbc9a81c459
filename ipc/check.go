package ipc

import (
	"encoding/binary"
	"fmt"
)

// checkBody walks one msgpack value and checks that every declared length
// (string, binary, extension, array, map) fits in the bytes that remain, so
// that decoding a frame allocates no more than the frame's own size: a
// 9-byte frame must not make the server reserve megabytes.
func checkBody(b []byte) error {
	off, pending := 0, 1 // values still to read
	need := func(n uint64) error {
		if n > uint64(len(b)-off) {
			return fmt.Errorf("declared length %d at byte %d exceeds the %d bytes left", n, off, len(b)-off)
		}
		return nil
	}
	for pending > 0 {
		if off >= len(b) {
			return fmt.Errorf("truncated msgpack value at byte %d", off)
		}
		c := b[off]
		off++
		pending--
		var size, items uint64 // bytes to skip, values to add
		sized := func(width int) error {
			if err := need(uint64(width)); err != nil {
				return err
			}
			switch width {
			case 1:
				size = uint64(b[off])
			case 2:
				size = uint64(binary.BigEndian.Uint16(b[off:]))
			case 4:
				size = uint64(binary.BigEndian.Uint32(b[off:]))
			}
			off += width
			return nil
		}
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * uint64(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = uint64(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			size = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			err = sized(1)
		case c == 0xc5 || c == 0xda:
			err = sized(2)
		case c == 0xc6 || c == 0xdb:
			err = sized(4)
		case c == 0xc7 || c == 0xc8 || c == 0xc9:
			err = sized(1 << (c - 0xc7))
			size++ // the type byte
		case c == 0xca:
			size = 4
		case c == 0xcb:
			size = 8
		case c >= 0xcc && c <= 0xcf:
			size = 1 << (c - 0xcc)
		case c >= 0xd0 && c <= 0xd3:
			size = 1 << (c - 0xd0)
		case c >= 0xd4 && c <= 0xd8:
			size = 1 + 1<<(c-0xd4)
		case c == 0xdc || c == 0xdd:
			err = sized(2 << (c - 0xdc))
			items, size = size, 0
		case c == 0xde || c == 0xdf:
			err = sized(2 << (c - 0xde))
			items, size = 2*size, 0
		default:
			return fmt.Errorf("invalid msgpack byte %#x at %d", c, off-1)
		}
		if err != nil {
			return err
		}
		if err := need(size); err != nil {
			return err
		}
		off += int(size)
		if err := need(items); err != nil { // every value takes at least a byte
			return err
		}
		pending += int(items)
	}
	if off != len(b) {
		return fmt.Errorf("%d bytes after the msgpack value", len(b)-off)
	}
	return nil
}
