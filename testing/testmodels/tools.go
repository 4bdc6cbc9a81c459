package testmodels

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// ToolCase is one of llama.cpp's tool-calling references in
// models/grammar/tools-cases.json: the request, the prompt and grammar
// llama.cpp built for it, its greedy output and the response it parsed.
type ToolCase struct {
	ID           string `json:"id"`
	Model        string `json:"model"`
	ChatTemplate string `json:"chat_template"`
	Request      struct {
		Messages   json.RawMessage `json:"messages"`
		Tools      json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	} `json:"request"`
	RenderedPrompt  string   `json:"rendered_prompt"`
	PromptTokens    []int    `json:"prompt_tokens"`
	ChatFormat      string   `json:"chat_format"`
	GrammarLazy     bool     `json:"grammar_lazy"`
	Grammar         string   `json:"grammar"`
	TriggerWords    []string `json:"grammar_trigger_words"`
	TriggerTokens   []int    `json:"grammar_trigger_tokens"`
	PreservedTokens []int    `json:"preserved_tokens"`
	StopStrings     []string `json:"stop_strings"`
	RawText         string   `json:"raw_text"`
	OutputTokens    []int    `json:"output_tokens"`
	Stop            string   `json:"stop"`
	Response        struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	} `json:"response"`
}

// ToolCases reads models/grammar/tools-cases.json, skipping the test
// where it is absent.
func ToolCases(tb testing.TB) []ToolCase {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(tb), "grammar", "tools-cases.json"))
	if err != nil {
		tb.Skipf("no tool-calling references: %v", err)
	}
	var cs []ToolCase
	if err := json.Unmarshal(b, &cs); err != nil {
		tb.Fatal(err)
	}
	return cs
}
