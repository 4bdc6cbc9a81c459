package toolcall

import "strings"

// Format is a way of writing tool calls that a model was trained on.
type Format string

const (
	// Hermes: <tool_call>{"name": ..., "arguments": ...}</tool_call>
	// (Hermes 2 Pro, Qwen 2.5, Qwen 3, QwQ).
	Hermes Format = "hermes"
	// Llama3: {"name": ..., "parameters": ...}, after <|python_tag|> or
	// not (Llama 3.1, 3.2, 3.3).
	Llama3 Format = "llama3"
	// MistralNemo: [TOOL_CALLS][{"name", "arguments", "id"}, ...]
	// (Mistral Nemo, Mistral Small).
	MistralNemo Format = "mistral-nemo"
	// Phi4: <|tool_call|>[{"name", "arguments"}, ...]<|/tool_call|>
	// (Phi-4-mini; tools go in the system message's "tools").
	Phi4 Format = "phi4"
	// DeepSeekR1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name
	// ```json ...```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜> (DeepSeek R1 and its distills).
	DeepSeekR1 Format = "deepseek-r1"
	// Harmony: gpt-oss's channels; a call is a commentary message to
	// functions.NAME, <|constrain|>json, its arguments, then <|call|>.
	Harmony Format = "harmony"
	// Qwen3Coder: <tool_call>\n<function=NAME>\n<parameter=ARG>\nVALUE\n</parameter>\n
	// </function>\n</tool_call>, each value typed by its parameter's schema
	// (Qwen3-Coder, Qwen3.5, Qwen3.6).
	Qwen3Coder Format = "qwen3-coder"
	// Gemma4: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>
	// (Gemma 4; its reasoning is <|channel>thought ... <channel|>).
	Gemma4 Format = "gemma4"
	// Generic: the whole answer is JSON, {"tool_call": ...} or
	// {"response": "..."}: templates that render tools some other way, or
	// not at all (the tools are then described in the system message).
	Generic Format = "generic"
)

// Formats are every format, for configuration and documentation.
var Formats = []Format{Hermes, Llama3, MistralNemo, Phi4, DeepSeekR1, Harmony, Qwen3Coder, Gemma4, Generic}

// Label is the format's name in llama.cpp's logs ("Chat format: ...").
func (f Format) Label() string {
	return map[Format]string{Hermes: "Hermes 2 Pro", Llama3: "Llama 3.x", MistralNemo: "Mistral Nemo", Phi4: "Phi-4",
		DeepSeekR1: "DeepSeek R1", Harmony: "GPT-OSS", Qwen3Coder: "Qwen3-Coder", Gemma4: "peg-gemma4", Generic: "Generic"}[f]
}

// Markers of the formats, as the models' vocabularies spell them.
const (
	hermesOpen   = "<tool_call>"
	hermesClose  = "</tool_call>"
	pythonTag    = "<|python_tag|>"
	eomID        = "<|eom_id|>"
	nemoOpen     = "[TOOL_CALLS]"
	phiOpen      = "<|tool_call|>"
	phiClose     = "<|/tool_call|>"
	phiFunctools = "functools["
	r1CallsOpen  = "<｜tool▁calls▁begin｜>"
	r1CallsClose = "<｜tool▁calls▁end｜>"
	r1CallOpen   = "<｜tool▁call▁begin｜>"
	r1CallClose  = "<｜tool▁call▁end｜>"
	r1Sep        = "<｜tool▁sep｜>"
)

// Detect says which format a chat template's source speaks, by what it
// writes (as llama.cpp's common_chat_templates_apply_jinja decides, in
// its order).
func Detect(src string) Format {
	switch {
	case strings.Contains(src, hChannel): // llama.cpp tries gpt-oss's first
		return Harmony
	case strings.Contains(src, hermesOpen) && strings.Contains(src, xmlFunction) && strings.Contains(src, xmlParameter) &&
		// templates that write no newline between the tags are not it
		!strings.Contains(src, "'<tool_call><function=' ~ tool_call.name ~ '>'"):
		return Qwen3Coder
	case strings.Contains(src, r1CallsOpen):
		return DeepSeekR1
	case strings.Contains(src, "'"+gemmaOpen+gemmaCall+"'"): // as llama.cpp tells Gemma 4's template
		return Gemma4
	case strings.Contains(src, hermesOpen):
		return Hermes
	case strings.Contains(src, "<|tool|>") && strings.Contains(src, "<|assistant|>"):
		return Phi4
	case strings.Contains(src, "<|start_header_id|>ipython<|end_header_id|>"):
		return Llama3
	case strings.Contains(src, nemoOpen):
		return MistralNemo
	}
	return Generic
}

// Tags open and close a reasoning block.
type Tags struct{ Open, Close string }

// Think are the <think> tags of Qwen 3, QwQ and DeepSeek R1.
var Think = Tags{"<think>", "</think>"}

// DetectReasoning returns the reasoning tags a template writes, or nil
// (harmony's reasoning is a channel, read by its parser: no tags).
func DetectReasoning(src string) *Tags {
	switch Detect(src) {
	case Harmony:
		return nil
	case Gemma4:
		t := Gemma4Thought
		return &t
	}
	if strings.Contains(src, Think.Open) || strings.Contains(src, Think.Close) {
		t := Think
		return &t
	}
	return nil
}

// OpensReasoning reports whether a rendered prompt leaves a reasoning block
// open for the model to continue (DeepSeek R1's and QwQ's generation
// prompt ends with "<think>\n").
func OpensReasoning(prompt string, t *Tags) bool {
	if t == nil {
		return false
	}
	return strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), t.Open)
}

// ClosesReasoning reports whether the rendered prompt ends with a closed
// block (Qwen 3's <think>\n\n</think> when thinking is off): the answer
// has no reasoning block of its own to open.
func ClosesReasoning(prompt string, t *Tags) bool {
	if t == nil {
		return false
	}
	return strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), t.Close)
}
