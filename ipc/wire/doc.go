// Package wire is the batchd protocol (ipc/PROTOCOL.md): the message types,
// the typed stats and health replies, the error codes that errors.Is
// matches on both sides, the framing, and a strict decoder that takes every
// msgpack encoding of a number and rejects values that do not fit. It
// imports nothing of batchd's, so that clients depend only on it.
package wire
