// Package httpapi serves an OpenAI-compatible HTTP API over the same
// backend as the msgpack socket (ipc.Backend): POST /v1/chat/completions,
// POST /v1/completions, GET /v1/models and GET /health, with OpenAI's
// request and response shapes (logprobs included), server-sent-event
// streaming and OpenAI's error shape.
//
// It listens on a Unix socket, where the peer's own credentials decide
// access under the same ipc.Policy as the msgpack socket, and optionally on
// TCP, where a bearer API key names the user. Either way the per-user cap
// is the msgpack server's own (ipc.Server.AcquireUser), so a user cannot
// double it by using both APIs.
//
// Bounds: request bodies (Options.MaxBodyBytes), header bytes and read time,
// open connections, a write deadline per streamed event. A client that
// hangs up cancels its request; every accepted request is read to its one
// terminal event, so nothing is left in the engine.
package httpapi
