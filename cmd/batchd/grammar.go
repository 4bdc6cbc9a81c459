package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/batchd/batchd/grammar"
)

// runGrammar is `batchd grammar`: the GBNF a JSON Schema (or a regex)
// becomes, as llama.cpp's json_schema_to_grammar.py prints it, so that a
// user can see what the output will be held to; a schema batchd refuses
// gets the same error a request would.
func runGrammar(_ context.Context, args []string, env *runEnv) error {
	fs := flag.NewFlagSet("grammar", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	schema := fs.String("schema", "", "JSON Schema file (- for standard input)")
	regex := fs.String("regex", "", "a regular expression the whole output matches")
	notStrict := fs.Bool("not-strict", false, "ignore keywords batchd cannot enforce instead of refusing them")
	check := fs.String("check", "", "GBNF file to parse and check, printed back when it compiles")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	set := 0
	for _, given := range []bool{*schema != "", *regex != "", *check != ""} {
		if given {
			set++
		}
	}
	if set != 1 || fs.NArg() > 0 {
		return usageError{errors.New("usage: batchd grammar --schema FILE [--not-strict] | --regex RE | --check FILE.gbnf")}
	}
	var spec grammar.Spec
	switch {
	case *schema != "":
		b, err := readFileOrStdin(*schema)
		if err != nil {
			return err
		}
		spec = grammar.Spec{Schema: b, Strict: !*notStrict}
	case *regex != "":
		spec = grammar.Spec{Regex: *regex}
	default:
		b, err := os.ReadFile(*check)
		if err != nil {
			return err
		}
		spec = grammar.Spec{GBNF: string(b)}
	}
	src, err := spec.GBNFText(context.Background())
	if err == nil {
		_, err = grammar.Parse(src)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(env.stdout, src)
	return err
}

func readFileOrStdin(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(os.Stdin, grammar.MaxSourceBytes+1))
	}
	return os.ReadFile(path)
}
