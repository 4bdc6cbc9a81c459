package daemon

import (
	"context"
	"errors"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/ipc/wire"
)

// Bounds on a request's structure besides the grammar's own.
const (
	maxChoices     = 256
	maxChoiceBytes = 4096
)

// grammarCacheSize is how many compiled grammars the daemon keeps.
const grammarCacheSize = 64

// specOf reads a submit's structured-output fields.
func specOf(s *wire.Submit) grammar.Spec {
	return grammar.Spec{GBNF: s.Grammar, Schema: s.JSONSchema, Strict: s.JSONSchemaStrict == nil || *s.JSONSchemaStrict,
		JSONObject: s.JSONObject, Regex: s.Regex, Choice: s.Choice}
}

// structured compiles what a submit asks its output to be (nil: nothing),
// through the cache; what cannot compile is invalid_argument, naming why.
func (d *Daemon) structured(ctx context.Context, s *wire.Submit) (*grammar.Grammar, error) {
	spec := specOf(s)
	if spec.Empty() {
		return nil, nil
	}
	if len(s.Choice) > maxChoices {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "choice: %d strings, at most %d", len(s.Choice), maxChoices)
	}
	for _, c := range s.Choice {
		if c == "" || len(c) > maxChoiceBytes {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "choice: each string 1 to %d bytes", maxChoiceBytes)
		}
	}
	if len(s.JSONSchema) > grammar.MaxSourceBytes || len(s.Regex) > grammar.MaxSourceBytes {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "json_schema or regex of more than %d bytes", grammar.MaxSourceBytes)
	}
	g, err := d.grammars.Get(ctx, spec)
	var se *grammar.SchemaError
	var sy *grammar.SyntaxError
	switch {
	case err == nil:
		return g, nil
	case errors.As(err, &se), errors.As(err, &sy), errors.Is(err, grammar.ErrTooComplex), errors.Is(err, grammar.ErrConflict):
		return nil, wire.Errorf(wire.CodeInvalidArgument, "%v", err)
	case ctx.Err() != nil:
		return nil, wire.Errorf(wire.CodeUnavailable, "the request ended while its grammar compiled: %v", ctx.Err())
	}
	return nil, wire.Errorf(wire.CodeInvalidArgument, "grammar: %v", err)
}
