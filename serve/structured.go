package serve

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

// specOf reads a submit's structured-output fields.
func specOf(s *wire.Submit) grammar.Spec {
	return grammar.Spec{GBNF: s.Grammar, Schema: s.JSONSchema, Strict: s.JSONSchemaStrict == nil || *s.JSONSchemaStrict,
		JSONObject: s.JSONObject, Regex: s.Regex, Choice: s.Choice}
}

// checkStructured bounds a submit's structured-output fields before
// anything compiles.
func checkStructured(s *wire.Submit) error {
	if len(s.Choice) > maxChoices {
		return wire.Errorf(wire.CodeInvalidArgument, "choice: %d strings, at most %d", len(s.Choice), maxChoices)
	}
	for _, c := range s.Choice {
		if c == "" || len(c) > maxChoiceBytes {
			return wire.Errorf(wire.CodeInvalidArgument, "choice: each string 1 to %d bytes", maxChoiceBytes)
		}
	}
	if len(s.JSONSchema) > grammar.MaxSourceBytes || len(s.Regex) > grammar.MaxSourceBytes {
		return wire.Errorf(wire.CodeInvalidArgument, "json_schema or regex of more than %d bytes", grammar.MaxSourceBytes)
	}
	return nil
}

// compile is the one place a request's grammar compiles (nil: none),
// through the cache: the structured output it asks for, or its tools'.
// What cannot compile is invalid_argument, naming why.
func (svc *Service) compile(ctx context.Context, spec grammar.Spec, what string) (*grammar.Grammar, error) {
	if spec.Empty() {
		return nil, nil
	}
	g, err := svc.grammars.Get(ctx, spec)
	var se *grammar.SchemaError
	var sy *grammar.SyntaxError
	switch {
	case err == nil:
		return g, nil
	case errors.As(err, &se), errors.As(err, &sy), errors.Is(err, grammar.ErrTooComplex), errors.Is(err, grammar.ErrConflict):
		return nil, wire.Errorf(wire.CodeInvalidArgument, "%s%v", what, err)
	case ctx.Err() != nil:
		return nil, wire.Errorf(wire.CodeUnavailable, "the request ended while its grammar compiled: %v", ctx.Err())
	case what != "":
		return nil, wire.Errorf(wire.CodeInternal, "%s%v", what, err) // a tool-call format's own grammar
	}
	return nil, wire.Errorf(wire.CodeInvalidArgument, "grammar: %v", err)
}
