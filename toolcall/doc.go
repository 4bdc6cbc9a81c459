// Package toolcall is tool calling and reasoning in the formats models are
// trained on: which format a chat template speaks (Detect, by what the
// template writes, as llama.cpp's common chat code decides), the grammar
// that makes a call well-formed against its tool's parameter schema (Build:
// llama.cpp's rules and names, so the same model picks the same tokens),
// and an incremental parser (Parser) that splits generated text into
// content, reasoning and calls as it streams, so that streamed deltas
// reassemble exactly to the whole message.
//
// It imports grammar only: the engine enforces the grammar, the
// daemon wires requests to it.
package toolcall
