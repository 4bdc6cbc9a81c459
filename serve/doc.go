// Package serve is batchd's serving layer: everything that happens to a
// request between the transports (ipc's msgpack server, httpapi and its
// Ollama routes, thin translators onto it) and an engine. A Service leases
// the request's model (serve/models: load on demand, keep_alive, eviction;
// load.go opens a file into a LoadedModel), checks and places it (channel,
// compliance rules, the prefix cache's salt), reads its tools in their
// model's format (toolcall), renders its conversation (chat, in a worker
// process), tokenizes it, compiles its one grammar (grammar, cached), and
// submits the engine request; on the way back it splits the text into
// content, reasoning and calls (toolcall's parser) and maps the terminal
// event to the wire. Embeddings, warm-up, pinned prefixes, the model list
// and model admin are here too.
//
// Invariants: a request enters each room once each way (prepare's
// order); a model with a request in flight holds a lease and is never
// unloaded; every stream a Submit returns ends with exactly one terminal
// event and releases its lease when that event is read.
package serve
