package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/batchd/batchd/chat"
	"github.com/batchd/batchd/daemon"
)

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// isUsage reports whether err is a command-line mistake, ours or serve's.
func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u) || daemon.IsUsage(err)
}

// runEnv carries the process's streams, so that commands are testable.
type runEnv struct {
	stdout, stderr io.Writer
}

const usage = `usage: batchd <command> [flags]

commands:
  serve      run the daemon: load the model and serve the Unix socket
  generate   run prompts through the engine in process and print the results
  profile    show the detected hardware, the profile chosen and the plan for --model
  tokenize   print the token ids of a text (like llama.cpp's llama-tokenize)
  template   print the text the chat template makes of a conversation
  grammar    print the GBNF a JSON Schema or regex becomes (structured output)
  tune       run the batch size x window x load matrix on --model, find the knee, recommend a setting
  version    print the version

Run 'batchd <command> -h' for a command's flags.
`

// run runs the command line: args are the arguments after the program name.
func run(ctx context.Context, args []string, env *runEnv) error {
	if len(args) == 0 {
		fmt.Fprint(env.stderr, usage)
		return usageError{errors.New("no command given")}
	}
	switch args[0] {
	case "serve":
		return daemon.Serve(ctx, args[1:], env.stderr)
	case "generate":
		return runGenerate(ctx, args[1:], env)
	case "profile":
		return runProfile(ctx, args[1:], env)
	case "tokenize":
		return runTokenize(ctx, args[1:], env)
	case "template":
		return runTemplate(ctx, args[1:], env)
	case "grammar":
		return runGrammar(ctx, args[1:], env)
	case "tune":
		return runTune(ctx, args[1:], env)
	case chat.WorkerArg: // the daemon's own child: renders chat templates (chat)
		if code := chat.RunWorker(os.Stdin, os.Stdout); code != 0 {
			return fmt.Errorf("template worker exited %d", code)
		}
		return nil
	case "version", "--version", "-version":
		fmt.Fprintln(env.stdout, "batchd", daemon.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(env.stdout, usage)
		return nil
	}
	fmt.Fprint(env.stderr, usage)
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

// newLogger builds the process logger at the named level.
func newLogger(w io.Writer, level, _ string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToLower(level))); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
