package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// A frame is a 4-byte big-endian body length followed by a msgpack map.

// ErrFrameTooLarge reports a frame whose declared length exceeds the limit.
var ErrFrameTooLarge = errors.New("frame too large")

// ReadFrame reads one frame body of at most max bytes. A clean end of stream
// before a frame is io.EOF; a frame cut short is io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, n, max)
	}
	if n <= frameChunk {
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return body, nil
	}
	// A large declared length is not reserved up front: memory grows with
	// the bytes that arrive, so a peer that sends a 5-byte header costs 5 bytes.
	var buf bytes.Buffer
	buf.Grow(frameChunk)
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// frameChunk is the largest body ReadFrame allocates before it arrives.
const frameChunk = 4 << 10

// WriteFrame encodes v as msgpack and writes it as one frame.
func WriteFrame(w io.Writer, v any) error {
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("msgpack")
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := w.Write(b)
	return err
}

// DecodeHeader checks a frame body's shape (see checkBody) and reads its
// type and id. Call it before Decode on untrusted input.
func DecodeHeader(body []byte) (Header, error) {
	var h Header
	if err := checkBody(body); err != nil {
		return h, err
	}
	if err := Decode(body, &h); err != nil {
		return h, err
	}
	if h.Type == "" {
		return h, errors.New("frame has no type")
	}
	return h, nil
}
