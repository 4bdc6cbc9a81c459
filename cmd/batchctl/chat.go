package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	client "github.com/batchd/batchd/clients/go"
)

// maxChatLine bounds one typed message.
const maxChatLine = 1 << 20

// chatCmd is `batchctl chat`: a conversation through the model's chat
// template, like `ollama run`: type a message, the reply streams, the
// history goes with the next one. /clear forgets it; /bye or end of input
// ends the chat. --message sends one turn and prints the reply.
func chatCmd(fs *flag.FlagSet) runFunc {
	var r client.Request
	var stops stringsFlag
	system := fs.String("system", "", "a system message to open the conversation")
	message := fs.String("message", "", "send this one message, print the reply and exit")
	fs.IntVar(&r.MaxTokens, "max-tokens", 0, "generated tokens per reply at most (default: up to the context)")
	temp := fs.Float64("temperature", 0.7, "sampling temperature (0 = greedy)")
	topP := fs.Float64("top-p", 0.95, "nucleus sampling mass (0 = off)")
	seed := fs.Int64("seed", client.SeedRandom, "sampling seed (default -1: a new one per reply)")
	fs.Var(&stops, "stop", "stop string (repeatable)")
	fs.StringVar(&r.Channel, "channel", "", "QoS channel: realtime, standard or bulk")
	fs.StringVar(&r.Model, "model", "", "the model (batchctl models; default: the daemon's default)")
	tools := fs.String("tools", "", "JSON file: an OpenAI-style tools array the model may call (calls are shown, not run)")
	fs.StringVar(&r.ToolChoice, "tool-choice", "", "auto (default), none, required, or a function's name")
	store := fs.Bool("store", false, "keep the conversation in the daemon: each turn sends only the new message and prints the "+
		"stored response's id (to stderr) for --continue or /v1/responses' previous_response_id")
	cont := fs.String("continue", "", "continue a stored conversation by its response id (implies --store)")
	return func(ctx context.Context, socket string, args []string, stdout, stderr io.Writer) error {
		if len(args) != 0 {
			return usageErr{fmt.Errorf("chat takes no arguments (use --message TEXT for one turn), got %q", args)}
		}
		var err error
		if r.Tools, err = readTools(*tools); err != nil {
			return err
		}
		r.Temperature, r.TopP, r.Stop = float32(*temp), float32(*topP), stops
		c, err := dial(ctx, socket)
		if err != nil {
			return err
		}
		defer c.Close()
		var opening []client.Message // what /clear goes back to
		if *system != "" {
			opening = []client.Message{{Role: "system", Content: *system}}
		}
		history := opening
		stored, prev := *store || *cont != "", *cont
		turn := func(text string) error {
			r.Messages = append(history, client.Message{Role: "user", Content: text})
			if stored { // the daemon holds what came before
				if prev != "" {
					r.Messages = r.Messages[len(history):]
				}
				r.PreviousResponseID, r.Store = prev, true
			}
			r.Seed = *seed
			var reply strings.Builder
			res, err := c.Generate(ctx, r, func(d client.Delta) error {
				if d.Reasoning != "" { // the thought, apart from the answer
					_, _ = io.WriteString(stderr, d.Reasoning)
				}
				reply.WriteString(d.Text)
				_, err := io.WriteString(stdout, d.Text)
				return err
			})
			fmt.Fprintln(stdout)
			if err != nil {
				return err
			}
			if res.FinishReason != "stop" && res.FinishReason != "length" && res.FinishReason != "tool_calls" {
				return fmt.Errorf("request %d ended: %s", res.RequestID, res.FinishReason)
			}
			history = append(r.Messages, answerOf(res, reply.String(), stdout))
			if stored {
				prev = res.ResponseID
				fmt.Fprintf(stderr, "(response %s)\n", prev)
			}
			return nil
		}
		if *message != "" {
			return turn(*message)
		}
		return chatLoop(ctx, os.Stdin, stdout, stderr, turn, func() { history, prev = opening, "" })
	}
}

// readTools reads a tools file ("": none).
func readTools(path string) (json.RawMessage, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s: not JSON", path)
	}
	return b, nil
}

// answerOf is a reply as the conversation's next message, its calls
// printed (they are shown, not run).
func answerOf(res *client.Result, text string, stdout io.Writer) client.Message {
	answer := client.Message{Role: "assistant", Content: text}
	if len(res.ToolCalls) > 0 {
		var calls []map[string]any
		for _, tc := range res.ToolCalls {
			fmt.Fprintf(stdout, "call %s %s(%s)\n", tc.ID, tc.Name, tc.Arguments)
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		answer.Extra = map[string]any{"tool_calls": calls}
	}
	return answer
}

// chatLoop reads messages line by line until /bye or the end of input.
func chatLoop(ctx context.Context, in io.Reader, stdout, stderr io.Writer, turn func(string) error, clear func()) error {
	interactive := isTerminal(in)
	if interactive {
		fmt.Fprintln(stderr, "Type a message (/clear forgets the conversation, /bye or Ctrl-D ends it).")
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxChatLine)
	for {
		if interactive {
			fmt.Fprint(stdout, ">>> ")
		}
		if !sc.Scan() {
			if interactive {
				fmt.Fprintln(stdout)
			}
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		switch line {
		case "":
			continue
		case "/bye", "/exit", "/quit":
			return nil
		case "/clear":
			clear()
			fmt.Fprintln(stderr, "(conversation cleared)")
			continue
		}
		if err := turn(line); err != nil {
			if ctx.Err() != nil || !errors.Is(err, client.ErrInvalidArgument) {
				return err
			}
			fmt.Fprintf(stderr, "batchctl: %v\n", err) // a template refusing a turn need not end the chat
		}
	}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
