package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// out writes one answer: newline-delimited JSON objects while streaming,
// then Ollama's final object with its figures; or the whole answer.
type out struct {
	w      http.ResponseWriter
	chat   bool
	model  string
	start  time.Time
	loaded time.Duration // from the request to the submit's acceptance: loading the model, rendering
	prompt []int
	failed bool
	began  bool
}

// chunk is one object of the answer.
type chunk struct {
	Model      string    `json:"model"`
	CreatedAt  time.Time `json:"created_at"`
	Message    *message  `json:"message,omitempty"`
	Response   *string   `json:"response,omitempty"`
	Thinking   string    `json:"thinking,omitempty"`
	Done       bool      `json:"done"`
	DoneReason string    `json:"done_reason,omitempty"`
	Context    []int     `json:"context,omitempty"`
	// The final object's figures, in nanoseconds.
	TotalDuration      int64 `json:"total_duration,omitempty"`
	LoadDuration       int64 `json:"load_duration,omitempty"`
	PromptEvalCount    int   `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64 `json:"prompt_eval_duration,omitempty"`
	EvalCount          int   `json:"eval_count,omitempty"`
	EvalDuration       int64 `json:"eval_duration,omitempty"`
}

func (o *out) piece(text, thinking string, calls []toolCall) chunk {
	c := chunk{Model: o.model, CreatedAt: time.Now().UTC()}
	if o.chat {
		c.Message = &message{Role: "assistant", Content: text, Thinking: thinking, ToolCalls: calls}
	} else {
		c.Response, c.Thinking = &text, thinking
	}
	return c
}

func (o *out) write(c chunk) {
	if o.failed {
		return
	}
	if !o.began {
		o.w.Header().Set("Content-Type", "application/x-ndjson")
		o.w.WriteHeader(http.StatusOK)
		o.began = true
	}
	if err := json.NewEncoder(o.w).Encode(c); err != nil {
		o.failed = true
		return
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
}

// run reads the stream to its end (always: nothing leaks), writing as it goes.
func (o *out) run(ctx context.Context, st ipc.RequestStream, stream bool, cancel func()) {
	var text, thinking strings.Builder
	var toks []int
	stop := context.AfterFunc(ctx, cancel) // the client hung up
	defer stop()
	for {
		ev, err := st.Next(context.Background())
		if err != nil {
			o.fail(http.StatusInternalServerError, err.Error())
			return
		}
		toks = append(toks, ev.Tokens...)
		if ev.Done == nil {
			if stream && (ev.Text != "" || ev.Reasoning != "") {
				o.write(o.piece(ev.Text, ev.Reasoning, nil))
			} else {
				text.WriteString(ev.Text)
				thinking.WriteString(ev.Reasoning)
			}
			continue
		}
		d := ev.Done
		text.WriteString(ev.Text)
		thinking.WriteString(ev.Reasoning)
		switch d.FinishReason {
		case "cancelled", "error":
			o.fail(http.StatusInternalServerError, "request ended: "+d.FinishReason+": "+d.Message)
			return
		}
		calls := callsOf(d.ToolCalls)
		if stream && len(calls) > 0 {
			o.write(o.piece("", "", calls))
			calls = nil
		}
		final := o.piece("", "", calls)
		if !stream {
			final = o.piece(text.String(), thinking.String(), calls)
			if final.Message != nil && d.Reasoning != "" {
				final.Message.Thinking = d.Reasoning
			}
		}
		o.finish(&final, d, toks)
		if stream {
			o.write(final)
			return
		}
		writeJSON(o.w, http.StatusOK, final)
		return
	}
}

// finish fills the final object's reason and figures.
func (o *out) finish(c *chunk, d *wire.Done, toks []int) {
	c.Done = true
	c.DoneReason = "stop"
	if d.FinishReason == "length" {
		c.DoneReason = "length"
	}
	queue := time.Duration(d.Timings.QueueS * float64(time.Second))
	first := time.Duration(d.Timings.FirstTokenS * float64(time.Second))
	total := time.Duration(d.Timings.TotalS * float64(time.Second))
	c.TotalDuration = int64(time.Since(o.start))
	c.LoadDuration = int64(o.loaded)
	c.PromptEvalCount = d.Usage.PromptTokens
	c.PromptEvalDuration = int64(max(first-queue, 0))
	c.EvalCount = d.Usage.CompletionTokens
	c.EvalDuration = int64(max(total-first, 0))
	if !o.chat {
		c.Context = append(append([]int(nil), o.prompt...), toks...)
	}
}

// fail reports an error: a status if nothing was written, else a last
// object with the error, as Ollama does mid-stream.
func (o *out) fail(status int, msg string) {
	if !o.began {
		writeError(o.w, status, msg)
		return
	}
	if !o.failed {
		_ = json.NewEncoder(o.w).Encode(map[string]string{"error": msg})
	}
}

func callsOf(calls []wire.ToolCall) []toolCall {
	var out []toolCall
	for i, c := range calls {
		var tc toolCall
		tc.Function.Index, tc.Function.Name, tc.Function.Arguments = i, c.Name, argsObject(c.Arguments)
		out = append(out, tc)
	}
	return out
}
