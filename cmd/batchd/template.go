package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/batchd/batchd/chat"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/serve"
	"github.com/batchd/batchd/tokenizer"
)

// runTemplate is `batchd template`: the exact text a chat request gives the
// model (the rendered template, nothing added), so that a user can see it.
func runTemplate(ctx context.Context, args []string, env *runEnv) error {
	fs := flag.NewFlagSet("template", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	modelPath := fs.String("model", "", "GGUF model or vocabulary file")
	tmplSetting := fs.String("chat-template", "", "a Jinja file or a built-in name ("+strings.Join(chat.BuiltinNames(), ", ")+"); default: the model's own")
	msgsFile := fs.String("messages", "", "JSON file (- for standard input): a messages array, or {\"messages\": [...], \"tools\": [...]}")
	noGen := fs.Bool("no-generation-prompt", false, "do not end with the assistant's turn opening")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *modelPath == "" || *msgsFile == "" || fs.NArg() > 0 {
		return usageError{errors.New("usage: batchd template --model FILE [--chat-template FILE.jinja|NAME] --messages FILE.json [--no-generation-prompt]")}
	}
	raw, err := tokenizeInput(nil, *msgsFile)
	if err != nil {
		return err
	}
	r, err := parseConversationFile([]byte(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", *msgsFile, err)
	}
	r.AddGenerationPrompt = !*noGen
	tok, fileTmpl, err := model.LoadVocabAndTemplate(*modelPath)
	if err != nil {
		return err
	}
	t, chatErr, err := serve.ChatTemplate(*tmplSetting, &model.Model{ChatTemplate: fileTmpl}, chat.Limits{})
	if err == nil {
		err = chatErr
	}
	if err != nil {
		return err
	}
	defer t.Close()
	text, err := serve.RenderChat(ctx, t, tok, r)
	if err != nil {
		return err
	}
	_, err = io.WriteString(env.stdout, tokenizer.RemoveMark(text, chat.Marker))
	return err
}

// parseConversationFile reads a messages array, or an object holding
// messages and tools, keeping their JSON text as written.
func parseConversationFile(b []byte) (serve.Conversation, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		return serve.Conversation{Messages: b}, nil
	}
	var obj struct {
		Messages json.RawMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return serve.Conversation{}, fmt.Errorf("want a messages array or an object with messages: %w", err)
	}
	if obj.Messages == nil {
		return serve.Conversation{}, errors.New(`no "messages"`)
	}
	return serve.Conversation{Messages: obj.Messages, Tools: obj.Tools}, nil
}
