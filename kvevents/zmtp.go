package kvevents

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// The publisher speaks ZMTP 3.1 (ZeroMQ's wire protocol, RFC 37) itself,
// as a PUB socket with the NULL mechanism: what a SUB peer (libzmq,
// go-zeromq) sends it is read here under fixed bounds, so that a frame's
// length is checked before anything is allocated and a stalled handshake
// costs one goroutine until its deadline, never the accept loop.

// Frame flags.
const (
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
)

const (
	greetingLen = 64
	// maxInFrame bounds any frame a subscriber sends: a subscription, a
	// READY, a PING. Topics are a few dozen bytes.
	maxInFrame = 4096
	// maxFilters bounds one subscriber's subscriptions.
	maxFilters = 64
)

// ErrProtocol: a peer broke ZMTP or a bound of this publisher; its
// connection is closed.
var ErrProtocol = errors.New("kv events: ZMTP")

// greeting is what this side sends: ZMTP 3.1, NULL, not a server (NULL has
// no roles). Byte 8 is libzmq's ZMTP/1.0 length of 1, as it sends it.
func greeting() []byte {
	g := make([]byte, greetingLen)
	g[0], g[8], g[9] = 0xFF, 0x01, 0x7F
	g[10], g[11] = 3, 1
	copy(g[12:32], "NULL")
	return g
}

// checkGreeting accepts a peer's ZMTP 3.x greeting with the NULL mechanism.
func checkGreeting(g []byte) error {
	if len(g) != greetingLen || g[0] != 0xFF || g[9] != 0x7F {
		return fmt.Errorf("%w: not a ZMTP 3 greeting", ErrProtocol)
	}
	if g[10] < 3 {
		return fmt.Errorf("%w: version %d.%d, want 3.x", ErrProtocol, g[10], g[11])
	}
	if mech := string(bytes.TrimRight(g[12:32], "\x00")); mech != "NULL" {
		return fmt.Errorf("%w: security mechanism %q: this publisher speaks NULL "+
			"(access is by endpoint: an ipc:// socket's permissions, kv_events.allow_from on TCP)", ErrProtocol, mech)
	}
	return nil
}

// readFrame reads one frame of at most max bytes; its length is checked
// before the body is read.
func readFrame(r *bufio.Reader, max int) (flags byte, body []byte, err error) {
	if flags, err = r.ReadByte(); err != nil {
		return 0, nil, err
	}
	if flags&^(flagMore|flagLong|flagCommand) != 0 {
		return 0, nil, fmt.Errorf("%w: reserved frame flags %#x", ErrProtocol, flags)
	}
	var n uint64
	if flags&flagLong != 0 {
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	} else {
		b, err := r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		n = uint64(b)
	}
	if n > uint64(max) {
		return 0, nil, fmt.Errorf("%w: a frame of %d bytes, at most %d", ErrProtocol, n, max)
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return flags, body, nil
}

// appendFrame appends one frame: short when the body fits a byte's length.
func appendFrame(dst []byte, flags byte, body []byte) []byte {
	if len(body) > 255 {
		dst = append(dst, flags|flagLong)
		dst = binary.BigEndian.AppendUint64(dst, uint64(len(body)))
	} else {
		dst = append(dst, flags, byte(len(body)))
	}
	return append(dst, body...)
}

// commandBody is a command's name (length-prefixed) and its data.
func commandBody(name string, data []byte) []byte {
	return append(append([]byte{byte(len(name))}, name...), data...)
}

// parseCommand splits a command frame's body.
func parseCommand(body []byte) (name string, data []byte, err error) {
	if len(body) == 0 || int(body[0]) > len(body)-1 {
		return "", nil, fmt.Errorf("%w: a malformed command", ErrProtocol)
	}
	n := int(body[0])
	return string(body[1 : 1+n]), body[1+n:], nil
}

// properties reads a READY command's metadata: name-length, name,
// 4-byte value length, value.
func properties(data []byte) (map[string]string, error) {
	out := map[string]string{}
	for len(data) > 0 {
		n := int(data[0])
		if 1+n+4 > len(data) {
			return nil, fmt.Errorf("%w: malformed metadata", ErrProtocol)
		}
		name := string(data[1 : 1+n])
		v := binary.BigEndian.Uint32(data[1+n:])
		data = data[1+n+4:]
		if uint64(v) > uint64(len(data)) {
			return nil, fmt.Errorf("%w: malformed metadata", ErrProtocol)
		}
		out[strings.ToLower(name)] = string(data[:v])
		data = data[v:]
	}
	return out, nil
}

// property encodes one metadata entry.
func property(name, value string) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	return append(b, value...)
}

// handshake exchanges greetings and READY commands with a subscriber on
// c, which must be done by deadline; the peer must be a SUB or XSUB.
func handshake(c net.Conn, r *bufio.Reader, deadline time.Time) error {
	_ = c.SetDeadline(deadline)
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write(greeting()); err != nil {
		return err
	}
	g := make([]byte, greetingLen)
	if _, err := io.ReadFull(r, g); err != nil {
		return err
	}
	if err := checkGreeting(g); err != nil {
		return err
	}
	ready := appendFrame(nil, flagCommand, commandBody("READY", property("Socket-Type", "PUB")))
	if _, err := c.Write(ready); err != nil {
		return err
	}
	flags, body, err := readFrame(r, maxInFrame)
	if err != nil {
		return err
	}
	name, data, err := parseCommand(body)
	if err != nil || flags&flagCommand == 0 || name != "READY" {
		return fmt.Errorf("%w: the first frame after the greeting must be READY", ErrProtocol)
	}
	props, err := properties(data)
	if err != nil {
		return err
	}
	if st := props["socket-type"]; st != "SUB" && st != "XSUB" {
		refusal := appendFrame(nil, flagCommand, commandBody("ERROR", append([]byte{byte(len("only SUB peers"))}, "only SUB peers"...)))
		_, _ = c.Write(refusal)
		return fmt.Errorf("%w: a %q peer; this is a PUB socket, for SUB peers", ErrProtocol, st)
	}
	return nil
}
