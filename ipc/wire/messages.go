package wire

// ProtocolVersion is the version this package speaks; hello must carry it.
const ProtocolVersion = 1

// DefaultMaxFrame is the largest frame body accepted unless configured otherwise.
const DefaultMaxFrame = 1 << 20

// Message types: the "type" field of every frame.
const (
	TypeHello     = "hello"
	TypeSubmit    = "submit"
	TypeAccepted  = "accepted"
	TypeToken     = "token"
	TypeDone      = "done"
	TypeCancel    = "cancel"
	TypeCancelled = "cancelled"
	TypeStats     = "stats"
	TypeHealth    = "health"
	TypeReload    = "reload"
	TypeModels    = "models"
	TypePS        = "ps"
	TypeLoad      = "load"
	TypeUnload    = "unload"
	TypeEmbed     = "embed"
	TypeWarm      = "warm"
	TypeRerank    = "rerank"
	TypeError     = "error"
)

// Header holds the two fields every frame has. ID is chosen by the client
// to match replies to requests on one connection (0 for connection-level frames).
type Header struct {
	Type string `msgpack:"type"`
	ID   uint64 `msgpack:"id"`
}

// Hello opens a connection (client to server) and answers it (server to client).
type Hello struct {
	Type    string `msgpack:"type"`
	ID      uint64 `msgpack:"id"`
	Version int    `msgpack:"version"`
	Client  string `msgpack:"client,omitempty"` // free text, for logs
	Server  string `msgpack:"server,omitempty"` // reply: server version
	Model   string `msgpack:"model,omitempty"`  // reply: model name
	UID     uint32 `msgpack:"uid"`              // reply: the peer uid the server sees
}

// SeedRandom as a Submit's Seed draws a fresh seed (llama.cpp's -1); any
// other negative seed is invalid.
const SeedRandom = -1

// Submit asks for a generation. Either Prompt (encoded with the special
// tokens the vocabulary adds, BOS for most) or Tokens.
type Submit struct {
	Type string `msgpack:"type"`
	ID   uint64 `msgpack:"id"`
	// Model names the model (a name or alias from the models list); ""
	// is the default model. KeepAlive (Ollama's: "5m", seconds, "0"
	// unloads once idle, "-1" forever; "" the model's default) is how
	// long the model stays loaded after this request.
	Model     string `msgpack:"model,omitempty"`
	KeepAlive string `msgpack:"keep_alive,omitempty"`
	// ContextLimit caps prompt plus output in tokens (Ollama's num_ctx):
	// a longer prompt is invalid, generation stops at it; 0 is the model's.
	ContextLimit int `msgpack:"context_limit,omitempty"`
	// Suffix, with Prompt, asks for the text between them (fill in the
	// middle) through the vocabulary's FIM tokens, as llama.cpp's infill.
	Suffix            string   `msgpack:"suffix,omitempty"`
	Prompt            string   `msgpack:"prompt,omitempty"`
	Tokens            []int    `msgpack:"tokens,omitempty"`
	MaxTokens         int      `msgpack:"max_tokens,omitempty"`
	Temperature       float32  `msgpack:"temperature,omitempty"`
	TopK              int      `msgpack:"top_k,omitempty"`
	TopP              float32  `msgpack:"top_p,omitempty"`
	MinP              float32  `msgpack:"min_p,omitempty"`
	RepetitionPenalty float32  `msgpack:"repetition_penalty,omitempty"`
	Seed              int64    `msgpack:"seed,omitempty"`              // SeedRandom (-1) or 0 and up: reproducible
	FrequencyPenalty  float32  `msgpack:"frequency_penalty,omitempty"` // OpenAI's, over the generated tokens
	PresencePenalty   float32  `msgpack:"presence_penalty,omitempty"`
	Stop              []string `msgpack:"stop,omitempty"`
	StopTokenIDs      []int    `msgpack:"stop_token_ids,omitempty"`
	IgnoreEOS         bool     `msgpack:"ignore_eos,omitempty"`   // run to max_tokens (benchmarks; vLLM's and llama.cpp's ignore_eos)
	Logprobs          bool     `msgpack:"logprobs,omitempty"`     // report each token's log-probability
	TopLogprobs       int      `msgpack:"top_logprobs,omitempty"` // and this many alternatives (0 to 20)
	Priority          int      `msgpack:"priority,omitempty"`
	Channel           string   `msgpack:"channel,omitempty"`
	Tags              []string `msgpack:"tags,omitempty"` // route a request without a channel
	// CacheSalt gives the request a prefix cache shared only with requests
	// of the same salt (vLLM's cache_salt); at most 256 bytes.
	CacheSalt string `msgpack:"cache_salt,omitempty"`
	Stream    bool   `msgpack:"stream,omitempty"`
	// ParseSpecial: special-token text in Prompt (<|im_start|>, <s>)
	// becomes those tokens. Absent means true, as llama.cpp's server does.
	ParseSpecial *bool `msgpack:"parse_special,omitempty"`
	// Messages: a conversation (an OpenAI-style messages array) that the
	// model's chat template renders into the prompt; instead of Prompt and Tokens.
	Messages JSON `msgpack:"messages,omitempty"`
	// PreviousResponseID continues a stored response's conversation:
	// Messages follow it (OpenAI's Responses API's previous_response_id,
	// over either listener). Store keeps this one's conversation, the
	// answer last, for a later submit; Done.ResponseID names it.
	PreviousResponseID string `msgpack:"previous_response_id,omitempty"`
	Store              bool   `msgpack:"store,omitempty"`
	// Tools: an OpenAI-style tools array, rendered by the template; the
	// model's calls come back parsed (Done.ToolCalls). ToolChoice is
	// "auto" (absent), "none", "required" or {"type": "function",
	// "function": {"name": ...}}; ParallelToolCalls (absent: true) lets
	// one answer hold several calls.
	Tools             JSON  `msgpack:"tools,omitempty"`
	ToolChoice        JSON  `msgpack:"tool_choice,omitempty"`
	ParallelToolCalls *bool `msgpack:"parallel_tool_calls,omitempty"`
	// ReasoningFormat: "auto" (absent) returns a <think> block apart
	// (Token.Reasoning, Done.Reasoning); "none" leaves it in the text;
	// "inline" leaves it in the text where the model writes it inline
	// (<think> tags) and returns it apart where it is a channel of its
	// own (harmony's analysis): Ollama's think left out.
	ReasoningFormat string `msgpack:"reasoning_format,omitempty"`
	// TemplateKwargs: more variables for the chat template, a JSON object
	// (Qwen 3's {"enable_thinking": false}).
	TemplateKwargs JSON `msgpack:"chat_template_kwargs,omitempty"`
	// Structured output, at most one: a GBNF grammar, a JSON Schema (strict
	// unless JSONSchemaStrict is false), any JSON object, a regular
	// expression the whole output matches, or one of a list of strings.
	Grammar          string   `msgpack:"grammar,omitempty"`
	JSONSchema       JSON     `msgpack:"json_schema,omitempty"`
	JSONSchemaStrict *bool    `msgpack:"json_schema_strict,omitempty"`
	JSONObject       bool     `msgpack:"json_object,omitempty"`
	Regex            string   `msgpack:"regex,omitempty"`
	Choice           []string `msgpack:"choice,omitempty"`
	// AddGenerationPrompt ends the rendered text with the assistant's turn
	// opening. Absent means true.
	AddGenerationPrompt *bool `msgpack:"add_generation_prompt,omitempty"`
}

// Accepted acknowledges a submit; RequestID is the server-wide id that
// cancel and logs use.
type Accepted struct {
	Type      string `msgpack:"type"`
	ID        uint64 `msgpack:"id"`
	RequestID uint64 `msgpack:"request_id"`
}

// Token carries a text delta of a streaming request; it never splits a
// UTF-8 character. Deltas of a slow reader are merged, never dropped.
type Token struct {
	Type     string    `msgpack:"type"`
	ID       uint64    `msgpack:"id"`
	Text     string    `msgpack:"text"`
	Tokens   []int     `msgpack:"tokens"`
	Logprobs []Logprob `msgpack:"logprobs,omitempty"` // one per token, when asked
	// Reasoning is a delta of the model's reasoning; ToolCalls are pieces
	// of its calls (a call's first piece has its id and name, later ones
	// more arguments). Text is then the answer's content alone.
	Reasoning string          `msgpack:"reasoning,omitempty"`
	ToolCalls []ToolCallDelta `msgpack:"tool_calls,omitempty"`
}

// ToolCallDelta is a piece of call Index: ID and Name on its first piece,
// Arguments (JSON text) in pieces that add up to the call's.
type ToolCallDelta struct {
	Index     int    `msgpack:"index"`
	ID        string `msgpack:"id,omitempty"`
	Name      string `msgpack:"name,omitempty"`
	Arguments string `msgpack:"arguments"`
}

// ToolCall is a call the model made: a function's name and its arguments
// as JSON text.
type ToolCall struct {
	ID        string `msgpack:"id"`
	Name      string `msgpack:"name"`
	Arguments string `msgpack:"arguments"`
}

// TokenLogprob is a token with its log-probability under the model's
// distribution (softmax of the raw logits). Text is the token's own text
// (valid UTF-8, U+FFFD for a partial character); Bytes its exact bytes.
type TokenLogprob struct {
	Token   int     `msgpack:"token"`
	Logprob float32 `msgpack:"logprob"`
	Text    string  `msgpack:"text"`
	Bytes   []byte  `msgpack:"bytes"`
}

// Logprob is a generated token's log-probability and its top alternatives.
type Logprob struct {
	Token   int            `msgpack:"token"`
	Logprob float32        `msgpack:"logprob"`
	Text    string         `msgpack:"text"`
	Bytes   []byte         `msgpack:"bytes"`
	Top     []TokenLogprob `msgpack:"top,omitempty"`
}

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens       int `msgpack:"prompt_tokens" json:"prompt_tokens"`
	CompletionTokens   int `msgpack:"completion_tokens" json:"completion_tokens"`
	CachedPromptTokens int `msgpack:"cached_prompt_tokens" json:"cached_prompt_tokens"`
}

// Timings measure a request's life, in seconds.
type Timings struct {
	QueueS      float64 `msgpack:"queue_s" json:"queue_s"`
	FirstTokenS float64 `msgpack:"first_token_s" json:"first_token_s"`
	TotalS      float64 `msgpack:"total_s" json:"total_s"`
}

// Done is the one terminal frame of every accepted request. For a request
// without stream, Text and Tokens hold the whole output.
type Done struct {
	Type         string `msgpack:"type"`
	ID           uint64 `msgpack:"id"`
	FinishReason string `msgpack:"finish_reason"` // stop, length, tool_calls, cancelled, error
	// StopSequence is the stop string that ended the text, when one did.
	StopSequence string `msgpack:"stop_sequence,omitempty"`
	Text         string `msgpack:"text,omitempty"`
	Tokens       []int  `msgpack:"tokens,omitempty"`
	PromptTokens []int  `msgpack:"prompt_tokens,omitempty"`
	// Logprobs of a request without stream that asked for them.
	Logprobs []Logprob `msgpack:"logprobs,omitempty"`
	// Reasoning of a request without stream; ToolCalls: every call the
	// answer made (streamed or not), finish_reason then tool_calls.
	Reasoning   string     `msgpack:"reasoning,omitempty"`
	ToolCalls   []ToolCall `msgpack:"tool_calls,omitempty"`
	Usage       Usage      `msgpack:"usage"`
	Timings     Timings    `msgpack:"timings"`
	Preemptions int        `msgpack:"preemptions"`
	// ResponseID names the stored conversation of a submit with Store.
	ResponseID string `msgpack:"response_id,omitempty"`
	Code       string `msgpack:"code,omitempty"` // set when finish_reason is error (or cancelled by the server)
	Message    string `msgpack:"message,omitempty"`
}

// Cancel ends a request: by the ID it was submitted with on this connection,
// or by RequestID (its own, or anyone's for an admin).
type Cancel struct {
	Type      string `msgpack:"type"`
	ID        uint64 `msgpack:"id"`
	Target    uint64 `msgpack:"target,omitempty"`     // ID of a submit on this connection
	RequestID uint64 `msgpack:"request_id,omitempty"` // server-wide id
}

// Cancelled acknowledges a cancel; the request's done frame follows on its own connection.
type Cancelled struct {
	Type      string `msgpack:"type"`
	ID        uint64 `msgpack:"id"`
	RequestID uint64 `msgpack:"request_id"`
}

// Stats asks for (client) or carries (server) the engine's figures.
type Stats struct {
	Type  string       `msgpack:"type"`
	ID    uint64       `msgpack:"id"`
	Stats *StatsReport `msgpack:"stats,omitempty"`
}

// Reload asks the daemon to re-read its config file (admins only), as
// SIGHUP does: an explicit reload, which may widen access. The reply has
// the same type: whether the file applied, and the restart fields it
// changes; a file that does not validate is an invalid_argument error.
type Reload struct {
	Type          string   `msgpack:"type"`
	ID            uint64   `msgpack:"id"`
	Applied       bool     `msgpack:"applied"`
	RestartNeeded []string `msgpack:"restart_needed"`
}

// Health asks for or reports the daemon's state.
type Health struct {
	Type    string     `msgpack:"type"`
	ID      uint64     `msgpack:"id"`
	State   string     `msgpack:"state,omitempty"` // loading, ready, sleeping, draining
	Model   *ModelInfo `msgpack:"model,omitempty"`
	Version string     `msgpack:"version,omitempty"`
}

// ErrorFrame reports a failed request or a bad frame.
type ErrorFrame struct {
	Type    string `msgpack:"type"`
	ID      uint64 `msgpack:"id"`
	Code    string `msgpack:"code"`
	Message string `msgpack:"message"`
}

// Models asks for (client) or carries (server) every model the daemon
// knows: loaded or not, with what holds each.
type Models struct {
	Type   string       `msgpack:"type"`
	ID     uint64       `msgpack:"id"`
	Models []ModelEntry `msgpack:"models,omitempty"`
}

// ModelEntry is one model of the list.
type ModelEntry struct {
	Name    string   `msgpack:"name" json:"name"`
	Aliases []string `msgpack:"aliases,omitempty" json:"aliases,omitempty"`
	Path    string   `msgpack:"path" json:"path"`
	// State: available, loading, loaded, failed or unloading; Error is
	// why the last load failed.
	State    string `msgpack:"state" json:"state"`
	Error    string `msgpack:"error,omitempty" json:"error,omitempty"`
	Default  bool   `msgpack:"default,omitempty" json:"default,omitempty"`
	Size     int64  `msgpack:"size" json:"size"`   // file bytes
	Bytes    int64  `msgpack:"bytes" json:"bytes"` // memory held while loaded
	Requests int    `msgpack:"requests" json:"requests"`
	// ExpiresAt: when an idle model unloads (Unix seconds; 0: not timed).
	ExpiresAt int64      `msgpack:"expires_at,omitempty" json:"expires_at,omitempty"`
	KeepAlive float64    `msgpack:"keep_alive_s" json:"keep_alive_s"` // -1: forever
	LoadS     float64    `msgpack:"load_s,omitempty" json:"load_s,omitempty"`
	Info      *ModelInfo `msgpack:"info,omitempty" json:"info,omitempty"` // while loaded
}

// Load asks for a model to be loaded (and kept keep_alive once idle); the
// reply, once it is, has the same type. Unload asks for it to unload once
// idle (now if nothing runs on it); the default model stays.
type Load struct {
	Type      string `msgpack:"type"`
	ID        uint64 `msgpack:"id"`
	Model     string `msgpack:"model"`
	KeepAlive string `msgpack:"keep_alive,omitempty"`
}

// Embed asks for the embeddings of Input (texts) or Tokens (token ids per
// input), one vector each; the reply has the same type, with Embeddings
// in input order. At most MaxEmbedInputs inputs.
type Embed struct {
	Type   string   `msgpack:"type"`
	ID     uint64   `msgpack:"id"`
	Model  string   `msgpack:"model,omitempty"`
	Input  []string `msgpack:"input,omitempty"`
	Tokens [][]int  `msgpack:"tokens,omitempty"`
	// Truncate (absent: true) cuts an input longer than the model's
	// context to fit; false refuses it.
	Truncate *bool `msgpack:"truncate,omitempty"`
	// Dimensions keeps the first this many values, normalised again
	// (Matryoshka models); 0 keeps all.
	Dimensions int `msgpack:"dimensions,omitempty"`
	// Normalize (absent: true) returns unit vectors, as OpenAI's and
	// Ollama's /api/embed do; false the pooled state as it is.
	Normalize *bool  `msgpack:"normalize,omitempty"`
	KeepAlive string `msgpack:"keep_alive,omitempty"`
	Channel   string `msgpack:"channel,omitempty"`
	// Tags route the inputs without a channel and bind them to their
	// compliance rules' channels, as a submit's do.
	Tags []string `msgpack:"tags,omitempty"`
	// Reply.
	Embeddings   [][]float32 `msgpack:"embeddings,omitempty"`
	PromptTokens int         `msgpack:"prompt_tokens,omitempty"`
}

// Warm prefills prompts (Prompts: texts, as a submit's prompt) and chat
// prefixes (Messages: an OpenAI-style messages array each, rendered by the
// model's chat template without a generation prompt) into the model's
// prefix cache, generating nothing, e.g. before a known peak. The reply
// has the same type, with Tokens (prompt tokens computed) and Cached (of
// those, already cached). At most MaxWarmEntries entries.
type Warm struct {
	Type     string   `msgpack:"type"`
	ID       uint64   `msgpack:"id"`
	Model    string   `msgpack:"model,omitempty"`
	Prompts  []string `msgpack:"prompts,omitempty"`
	Messages []JSON   `msgpack:"messages,omitempty"`
	// Reply.
	Tokens int `msgpack:"tokens,omitempty"`
	Cached int `msgpack:"cached,omitempty"`
}

// MaxWarmEntries bounds one warm request's prompts and chats together.
const MaxWarmEntries = 1024

// Rerank scores Documents by their relevance to Query with a reranker
// (a model whose file pools with rank: a cross-encoder such as
// bge-reranker, or Qwen3-Reranker); the reply has the same type, with
// Results sorted by score, best first, the first TopN of them (0: all).
// At most MaxEmbedInputs documents.
type Rerank struct {
	Type      string   `msgpack:"type"`
	ID        uint64   `msgpack:"id"`
	Model     string   `msgpack:"model,omitempty"`
	Query     string   `msgpack:"query"`
	Documents []string `msgpack:"documents"`
	TopN      int      `msgpack:"top_n,omitempty"`
	KeepAlive string   `msgpack:"keep_alive,omitempty"`
	Channel   string   `msgpack:"channel,omitempty"`
	Tags      []string `msgpack:"tags,omitempty"`
	// Reply. Probabilities: the head ends in a softmax, so the scores are
	// probabilities (Qwen3-Reranker's), not logits.
	Results       []RerankResult `msgpack:"results,omitempty"`
	PromptTokens  int            `msgpack:"prompt_tokens,omitempty"`
	Probabilities bool           `msgpack:"probabilities,omitempty"`
}

// RerankResult is one document's score: the reranker's first output, as
// llama-server reports it (a cross-encoder's logit; Qwen3-Reranker's
// probability of "yes").
type RerankResult struct {
	Index int     `msgpack:"index" json:"index"`
	Score float32 `msgpack:"score" json:"score"`
}

// MaxEmbedInputs bounds the inputs of one embed request (OpenAI's limit).
const MaxEmbedInputs = 2048
