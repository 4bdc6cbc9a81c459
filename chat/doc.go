// Package chat renders a model's chat template: the Jinja program, shipped in
// a GGUF's tokenizer.chat_template, that turns an OpenAI-style conversation
// into the prompt text the model was trained on.
//
// It renders as Hugging Face's apply_chat_template does (jinja2 with
// trim_blocks and lstrip_blocks, a tojson that keeps non-ASCII text and key
// order, raise_exception, strftime_now), with the variables it passes:
// messages, add_generation_prompt, bos_token, eos_token and tools. Messages
// and tools reach the template as the client wrote them, key order included,
// because templates print tool schemas with tojson.
//
// The engine is github.com/ardanlabs/jinja (pure Go, no dependencies, written
// for chat templates, and byte-exact on every reference render); this
// package adds the conversation checks, a bounded range, a fixed clock for
// strftime_now and typed errors.
//
// A template is a program from the model file, and GGUFs come from the
// internet: Go cannot recover from a stack overflow or an allocation past
// memory, and cannot stop a goroutine in a loop. So the Jinja engine runs
// only in worker processes (worker.go: the daemon's own binary started as
// `batchd template-worker`, one Go thread, a bounded stack and address
// space), and the daemon side (pool.go) bounds each render's wall time and
// output, kills the worker when the request's context ends, and never
// reuses one that broke a limit. A broken limit is a *TemplateError with
// Budget set: a bad request, never the daemon's end. A template whose test
// render at Compile breaks one does not compile.
package chat
