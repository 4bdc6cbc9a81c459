package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/batchd/batchd/chat"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/tokenizer"
	"github.com/batchd/batchd/toolcall"
)

// maxTemplateBytes bounds a chat template file; real ones are under 20 KB.
const maxTemplateBytes = 1 << 20

// ChatTemplate resolves the chat template: the setting (a built-in name or
// a file) or else the model's own. A setting that fails is err (the daemon
// does not start); a model without a usable template is chatErr, which chat
// requests get while prompts still work.
func ChatTemplate(setting string, m *model.Model, limits chat.Limits) (t *chat.Template, chatErr, err error) {
	if setting != "" {
		if t, ok, err := chat.Builtin(setting); ok {
			return t, nil, err
		}
		src, err := readTemplate(setting)
		if err != nil {
			return nil, nil, fmt.Errorf("chat_template: %w (built-in names: %s)", err, strings.Join(chat.BuiltinNames(), ", "))
		}
		t, err := chat.CompileLimits(setting, src, limits)
		return t, nil, err
	}
	if m.ChatTemplate == "" {
		return nil, chat.ErrNoTemplate, nil
	}
	t, err = chat.CompileLimits("from the model file", m.ChatTemplate, limits)
	return t, err, nil
}

func readTemplate(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTemplateBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxTemplateBytes {
		return "", fmt.Errorf("%s: larger than %d bytes", path, maxTemplateBytes)
	}
	return string(b), nil
}

// Conversation is a chat to render: its messages and tools as JSON, and
// what the tool-call format adds.
type Conversation struct {
	Messages, Tools     []byte
	AddGenerationPrompt bool
	// ParseSpecial lets the conversation's strings spell control tokens
	// (model.parse_special_in_messages, the peers' behaviour); otherwise a
	// user's <|im_start|> stays text and cannot forge a turn.
	ParseSpecial bool
	// Tool calling: chat.Input's Polyfill, System, ToolsInSystem, Vars.
	Polyfill, ToolsInSystem bool
	System                  string
	Vars                    []byte
}

// RenderChat renders a conversation with the template and the vocabulary's
// BOS and EOS texts.
func RenderChat(ctx context.Context, t *chat.Template, tok *tokenizer.Tokenizer, r Conversation) (string, error) {
	in := chat.Input{Messages: r.Messages, Tools: r.Tools, AddGenerationPrompt: r.AddGenerationPrompt,
		Polyfill: r.Polyfill, System: r.System, ToolsInSystem: r.ToolsInSystem, Vars: r.Vars}
	if !r.ParseSpecial {
		in.TextOnly = tok.ControlTexts()
	}
	if tok.BOS >= 0 {
		in.BOS = tok.PieceText(tok.BOS)
	}
	if tok.EOS >= 0 {
		in.EOS = tok.PieceText(tok.EOS)
	}
	return t.Render(ctx, in)
}

// TokenizeChat tokenizes rendered chat text with special tokens parsed,
// but those the conversation's strings spell (shielded with chat.Marker)
// kept as text. The vocabulary's BOS is added only when the template did
// not write it (as llama.cpp and Hugging Face avoid a second BOS); EOS
// never is.
func TokenizeChat(ctx context.Context, tok *tokenizer.Tokenizer, text string) ([]int, error) {
	toks, err := tok.Tokenize(ctx, text, tokenizer.Options{ParseSpecial: true, TextMark: chat.Marker})
	if err != nil {
		return nil, err
	}
	if tok.AddBOS && tok.BOS >= 0 && (len(toks) == 0 || toks[0] != tok.BOS) {
		toks = append([]int{tok.BOS}, toks...)
	}
	return toks, nil
}

// chatPrompt renders and tokenizes a chat request for the runtime, with the
// errors a client gets on the wire; it returns the tokens and the text.
func chatPrompt(ctx context.Context, lm *LoadedModel, r Conversation) ([]int, string, error) {
	if lm.Chat == nil {
		return nil, "", wire.Errorf(wire.CodeInvalidArgument, "chat: %v", lm.ChatErr)
	}
	r.ParseSpecial = lm.ParseSpecialInMessages
	text, err := RenderChat(ctx, lm.Chat, lm.Model.Tokenizer, r)
	var te *chat.TemplateError
	switch {
	case errors.As(err, &te) || errors.Is(err, chat.ErrInvalidMessages):
		return nil, "", wire.Errorf(wire.CodeInvalidArgument, "%v", err)
	case ctx.Err() != nil:
		return nil, "", wire.Errorf(wire.CodeUnavailable, "chat: %v", err)
	case err != nil:
		return nil, "", wire.Errorf(wire.CodeInternal, "chat: %v", err)
	}
	if lm.Tools.format == toolcall.Harmony && !r.AddGenerationPrompt {
		// The template ends a final answer with <|return|>, which only
		// ends training text; continued, the turn ends with <|end|> (as
		// llama.cpp renders it for inference).
		if i := strings.LastIndex(text, "<|return|>"); i >= 0 {
			text = text[:i] + "<|end|>" + text[i+len("<|return|>"):]
		}
	}
	if n := lm.Model.Tokenizer.MinTokens(text); n+1 > lm.Model.Config.Context {
		return nil, "", wire.Errorf(wire.CodeInvalidArgument, "conversation of %d bytes is at least %d tokens: more than the context of %d",
			len(text), n+1, lm.Model.Config.Context)
	}
	toks, err := TokenizeChat(ctx, lm.Model.Tokenizer, text)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeUnavailable, "tokenizing stopped: %v", err)
	}
	return toks, text, nil
}
