// Package ipc is batchd's wire protocol and Unix-socket server: framing
// (length-prefixed msgpack, PROTOCOL.md), message types, error codes that
// errors.Is matches on both sides, safe socket creation, SO_PEERCRED access
// control, and a Server in the shape of net/http.Server.
//
// Invariants kept: a bad frame gets an error frame or a clean close and never
// takes the server down; every accepted request gets exactly one done frame
// (its pump reads the backend's stream to the end even when the client is
// gone); the backend never waits on a slow client.
//
// It knows nothing of the engine: the daemon adapts the engine to Backend.
package ipc
