package httpapi

import (
	"encoding/json"
	"fmt"
)

// chatRequest is the body of POST /v1/chat/completions. Pointers tell an
// absent field from a zero one. Unknown fields are ignored, as llama.cpp's
// server and vLLM ignore them.
type chatRequest struct {
	Model    string          `json:"model"`
	Messages json.RawMessage `json:"messages"`
	// Tool calling (tools.go): OpenAI's fields, llama.cpp's and vLLM's
	// reasoning_format and chat_template_kwargs; the legacy functions and
	// function_call are refused by name.
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	ReasoningFormat    string          `json:"reasoning_format"`
	ReasoningEffort    *string         `json:"reasoning_effort"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs"`
	Functions          json.RawMessage `json:"functions"`
	FunctionCall       json.RawMessage `json:"function_call"`
	samplingFields
}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	Model  string          `json:"model"`
	Prompt json.RawMessage `json:"prompt"`
	Echo   bool            `json:"echo"`
	Suffix *string         `json:"suffix"`
	BestOf *int            `json:"best_of"`
	samplingFields
}

// samplingFields are the fields both endpoints share.
type samplingFields struct {
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	Logprobs            json.RawMessage `json:"logprobs"` // bool (chat) or int (completions)
	TopLogprobs         *int            `json:"top_logprobs"`
	LogitBias           map[string]any  `json:"logit_bias"`
	User                string          `json:"user"`
	// Extensions that llama.cpp's server and vLLM also take.
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	IgnoreEOS         bool     `json:"ignore_eos"`
	// batchd's own: the QoS channel and priority (also the
	// X-Batchd-Channel and X-Batchd-Priority headers).
	Channel  string `json:"channel"`
	Priority *int   `json:"priority"`
	// CacheSalt: vLLM's cache_salt, a prefix cache shared only with
	// requests of the same salt.
	CacheSalt string `json:"cache_salt"`
	// Tags route a request without a channel (routing.tags) and bind it to
	// the channel a compliance rule names for them.
	Tags []string `json:"tags"`
	// Structured output: OpenAI's response_format, llama.cpp's grammar and
	// json_schema, vLLM's structured_outputs (structured.go).
	ResponseFormat    *responseFormat            `json:"response_format"`
	Grammar           *string                    `json:"grammar"`
	JSONSchema        json.RawMessage            `json:"json_schema"`
	StructuredOutputs map[string]json.RawMessage `json:"structured_outputs"`
}

// responseFormat is OpenAI's response_format (and llama.cpp's json_object
// with a schema).
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
	Schema json.RawMessage `json:"schema"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// stops reads "stop": a string or an array of strings.
func (f *samplingFields) stops() ([]string, error) {
	if len(f.Stop) == 0 || string(f.Stop) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(f.Stop, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(f.Stop, &many); err != nil {
		return nil, fmt.Errorf("stop: want a string or an array of strings")
	}
	return many, nil
}

// usage is OpenAI's usage object.
type usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *promptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// chatMessage is an answer: content null when it is only calls.
type chatMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

type chatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

// toolCall is OpenAI's message.tool_calls[i].
type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// toolCallDelta is a streamed piece of a call: index, id, type and name
// first, then arguments in pieces.
type toolCallDelta struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionCall `json:"function"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatDelta   `json:"delta,omitempty"`
	Logprobs     any          `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
	// StopReason is the stop string that ended the text (vLLM's field),
	// present only when one did.
	StopReason *string `json:"stop_reason,omitempty"`
}

type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
	StopReason   *string `json:"stop_reason,omitempty"`
}

// response is a completion, or a chunk of a streamed one.
type response struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           any    `json:"choices"`
	Usage             *usage `json:"usage,omitempty"`
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// apiError is OpenAI's error object.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
