// Command batchctl talks to a running batchd over its Unix socket:
//
//	batchctl generate [flags] PROMPT
//	batchctl chat [--system TEXT] [--message TEXT] [flags]
//	batchctl cancel ID
//	batchctl stats [--json]
//	batchctl health [--json]
//	batchctl version
//
// --socket PATH may come before or after the command; it defaults to
// $BATCHD_SOCKET, then /run/batchd/batchd.sock.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	client "github.com/batchd/batchd/clients/go"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: batchctl <command> [flags]

commands:
  generate PROMPT   generate text, streaming it as it arrives
  chat              talk with the model through its chat template (--message for one turn)
  cancel ID         cancel a request by its id (batchctl stats lists them)
  stats             show the engine's figures and the requests in flight
  health            show the daemon's state (exit status 0 only when ready)
  reload            re-read the daemon's config file, as SIGHUP does (admins)
  embed TEXT...     print embeddings, one JSON array per text
  rerank Q DOC...   score documents against a query with a reranker, best first
  models            list every model, loaded or not; ps: the loaded ones
  load MODEL        load a model (--keep-alive D); unload MODEL: unload it once idle
  version           print batchctl's version and the daemon's

global flags (before or after the command):
  --socket PATH     the daemon's socket (default $BATCHD_SOCKET, then ` + client.DefaultSocket + `)

Run 'batchctl <command> --help' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// usageErr is a command-line mistake: exit status 2.
type usageErr struct{ error }

// errHelp is --help: the usage went to stdout, exit status 0.
var errHelp = errors.New("help")

// command is one subcommand: its flags, what its arguments are, and its run.
type command struct {
	name, args, summary string
	flags               func(fs *flag.FlagSet) func(ctx context.Context, socket string, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"generate", "[flags] PROMPT", "Generate text for PROMPT, streaming it as it arrives (--schema FILE or --grammar FILE constrain it).", generateCmd},
	{"chat", "[--system TEXT] [--message TEXT] [flags]", "Chat with the model: type messages, replies stream; the model's chat template renders the conversation.", chatCmd},
	{"cancel", "ID", "Cancel request ID: your own, or anyone's for an admin.", cancelCmd},
	{"stats", "[--json]", "Show the engine's figures and the requests in flight.", statsCmd},
	{"top", "[--interval D] [--count N]", "A live view: requests, queue, KV use, tokens/s, batch fill, health, the controller's moves.", topCmd},
	{"health", "[--json]", "Show the daemon's state; exit status 0 only when it is ready.", healthCmd},
	{"reload", "", "Re-read the daemon's config file, as SIGHUP does (admins): the way to apply a change that widens access.", reloadCmd},
	{"tune", "[--config FILE] [--sizes ...] [--apply]", "Run the batch size x window x load matrix against the daemon (bulk channel), find the knee, recommend; --apply rolls it out or back.", tuneCmd},
	{"warm", "[--model M] FILE", "Prefill FILE's prompts and chat prefixes (JSONL) into the prefix cache, e.g. before a known peak.", warmCmd},
	{"embed", "[--model M] [--dimensions N] TEXT...", "Print each TEXT's embedding as a JSON array, one per line.", embedCmd},
	{"rerank", "[--model M] [--top-n N] [--json] QUERY DOC...", "Score each DOC's relevance to QUERY with a reranker; print the best first.", rerankCmd},
	{"models", "[--json]", "List every model the daemon knows, loaded or not.", modelsCmd(false)},
	{"ps", "[--json]", "List the models loaded now.", modelsCmd(true)},
	{"load", "[--keep-alive D] MODEL", "Load MODEL and keep it D once idle.", loadCmd(false)},
	{"unload", "MODEL", "Unload MODEL once no request runs on it (the default model stays).", loadCmd(true)},
	{"version", "", "Print batchctl's version and, if it answers, the daemon's.", versionCmd},
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	socket := ""
	// Global flags before the command.
	global := flag.NewFlagSet("batchctl", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	global.StringVar(&socket, "socket", "", "")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "batchctl: %v\n%s", err, usage)
		return 2
	}
	rest := global.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if rest[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == rest[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "batchctl: unknown command %q\n%s", rest[0], usage)
		return 2
	}
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // usage is printed once, below
	fs.StringVar(&socket, "socket", socket, "the daemon's socket (default $BATCHD_SOCKET, then "+client.DefaultSocket+")")
	runCmd := cmd.flags(fs)
	pos, err := parseInterleaved(fs, rest[1:])
	if err == nil {
		err = runCmd(ctx, socket, pos, stdout, stderr)
	}
	var ue usageErr
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp), errors.Is(err, errHelp):
		printCommandUsage(stdout, cmd, fs)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "batchctl %s: %v\n", cmd.name, ue.error)
		printCommandUsage(stderr, cmd, fs)
		return 2
	default:
		fmt.Fprintf(stderr, "batchctl: %v\n", explain(err, client.SocketPath(socket)))
		return 1
	}
}

// parseInterleaved parses flags anywhere among the arguments (batchctl
// generate "text" --max-tokens 5) and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageErr{err}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func printCommandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: batchctl %s %s\n\n%s\n\nflags:\n", cmd.name, cmd.args, cmd.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// explain turns a connection failure into what to do about it.
func explain(err error, socket string) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("no daemon socket at %s: is batchd running? (systemctl status batchd.socket batchd); "+
			"another socket can be given with --socket PATH or BATCHD_SOCKET", socket)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("permission denied on %s: your user must be in the batchd group "+
			"(sudo usermod -aG batchd $USER, then log in again)", socket)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing is listening on %s: batchd is not running (the socket file is left over); "+
			"start it with systemctl start batchd", socket)
	case errors.Is(err, client.ErrPermissionDenied):
		return fmt.Errorf("%w (the daemon's server.allowed_users and allowed_groups decide who may connect)", err)
	}
	return err
}

func dial(ctx context.Context, socket string) (*client.Client, error) {
	return client.Dial(ctx, socket)
}
