package httpapi

import (
	"encoding/json"

	"github.com/batchd/batchd/ipc/wire"
)

// toolsFrom maps a chat request's tool and reasoning fields.
func toolsFrom(req *chatRequest, s *wire.Submit) *httpError {
	if present(req.Functions) {
		return errInvalid("functions", "functions (deprecated by OpenAI) is not supported: send tools")
	}
	if present(req.FunctionCall) {
		return errInvalid("function_call", "function_call (deprecated by OpenAI) is not supported: send tool_choice")
	}
	if present(req.Tools) {
		s.Tools = wire.JSON(req.Tools)
	}
	if present(req.ToolChoice) {
		s.ToolChoice = wire.JSON(req.ToolChoice)
	}
	if present(req.ChatTemplateKwargs) {
		s.TemplateKwargs = wire.JSON(req.ChatTemplateKwargs)
	}
	s.ParallelToolCalls, s.ReasoningFormat = req.ParallelToolCalls, req.ReasoningFormat
	if req.ReasoningEffort != nil {
		return reasoningEffort(*req.ReasoningEffort, s)
	}
	return nil
}

// reasoningEffort maps OpenAI's reasoning_effort to the template, as
// llama.cpp does: "none" turns thinking off (enable_thinking false), a
// level is the template's reasoning_effort (gpt-oss's "Reasoning: high").
// It wins over the same chat_template_kwargs.
func reasoningEffort(effort string, s *wire.Submit) *httpError {
	switch effort {
	case "none", "minimal", "low", "medium", "high", "xhigh":
	default:
		return errInvalid("reasoning_effort", "reasoning_effort %q: want none, minimal, low, medium, high or xhigh", effort)
	}
	vars := map[string]json.RawMessage{}
	if len(s.TemplateKwargs) > 0 {
		if err := json.Unmarshal(s.TemplateKwargs, &vars); err != nil || vars == nil {
			return errInvalid("chat_template_kwargs", "chat_template_kwargs: want a JSON object")
		}
	}
	if effort == "none" {
		delete(vars, "reasoning_effort")
		vars["enable_thinking"] = json.RawMessage("false")
	} else {
		vars["reasoning_effort"], _ = json.Marshal(effort)
	}
	b, _ := json.Marshal(vars)
	s.TemplateKwargs = wire.JSON(b)
	return nil
}

// toolCallsOf are the done frame's calls as OpenAI's message.tool_calls.
func toolCallsOf(cs []wire.ToolCall) []toolCall {
	out := make([]toolCall, len(cs))
	for i, c := range cs {
		out[i] = toolCall{ID: c.ID, Type: "function", Function: functionCall{Name: c.Name, Arguments: c.Arguments}}
	}
	return out
}

// toolDeltasOf are a token frame's call pieces as OpenAI's delta.tool_calls.
func toolDeltasOf(ds []wire.ToolCallDelta) []toolCallDelta {
	out := make([]toolCallDelta, len(ds))
	for i, d := range ds {
		out[i] = toolCallDelta{Index: d.Index, ID: d.ID, Function: functionCall{Name: d.Name, Arguments: d.Arguments}}
		if d.Name != "" {
			out[i].Type = "function"
		}
	}
	return out
}
