package toolcall

import (
	"context"
	"strings"

	"github.com/batchd/batchd/grammar"
)

// Harmony's grammars, as llama.cpp v0.5.0's gpt-oss handler builds them
// from its parser: messages on the analysis or commentary channel first
// (free text up to <|end|>, then <|start|>assistant), then what the request
// asks for. The first message's <|start|>assistant is the prompt's.

// harmonyPreserve are the markers the parser reads, kept in the text even
// where they are control tokens (<|call|> and <|return|> end the turn).
var harmonyPreserve = []string{hChannel, hConstrain, hMessage, hStart, hEnd}

// harmonyTrigger starts a lazy call grammar: every form of a call's header
// (the recipient in the role or in the channel) holds it.
const harmonyTrigger = hTo + hFunctions

// harmonyCommon adds the rules every harmony grammar shares: a message's
// free body (no "<|", so that <|end|> ends it), a content type, and the
// messages that may come before the answer.
func harmonyCommon(b *grammar.Builder, channels string) (before, constraint string) {
	body := b.AddRule("harmony-body", `( [^<] | "<"+ [^<|] )*`)
	constraint = b.AddRule("harmony-constraint", grammar.Literal(" "+hConstrain+"json")+" | "+grammar.Literal(" json")+" | "+
		grammar.Literal(hConstrain+"json"))
	before = b.AddRule("harmony-before", grammar.Literal(hChannel)+" ( "+channels+" ) "+grammar.Literal(hMessage)+" "+body+" "+
		grammar.Literal(hEnd+hStart+"assistant"))
	return before, constraint
}

// harmonyGrammar is the grammar of a call: from the trigger when lazy,
// else from the answer's start, after any analysis or commentary.
func harmonyGrammar(b *grammar.Builder, root string, tools []Tool, lazy bool) error {
	before, constraint := harmonyCommon(b, grammar.Literal("analysis")+" | "+grammar.Literal("commentary"))
	channel := b.AddRule("harmony-call-channel", grammar.Literal(hChannel)+" ( "+grammar.Literal("commentary")+" | "+
		grammar.Literal("analysis")+" )")
	var calls []string
	for _, t := range tools {
		params, err := parameters(b, t)
		if err != nil {
			return err
		}
		args := b.AddSchema(t.Name+"-args", params)
		tail := " " + constraint + "? " + grammar.Literal(hMessage) + " " + args
		var rule string
		if lazy {
			// From the trigger: the channel follows the name (recipient in
			// the role) or came before the trigger (in the channel).
			rule = grammar.Literal(t.Name) + " " + channel + "?" + tail
		} else {
			to := grammar.Literal(hTo + hFunctions + t.Name)
			rule = "( " + to + " " + channel + " | " + channel + " " + to + " )" + tail
		}
		calls = append(calls, b.AddRule("tool-"+t.Name, rule))
	}
	call := "( " + strings.Join(calls, " | ") + " )"
	if lazy {
		b.AddRule(root, grammar.Literal(harmonyTrigger)+" "+call)
		return nil
	}
	b.AddRule(root, before+"* "+call)
	return nil
}

// HarmonyAnswer is the grammar of an answer in a JSON schema for a harmony
// model: any analysis first, then the final channel (<|constrain|>json or
// not) holding the JSON, as llama.cpp constrains response_format there.
// strict is SchemaOptions.Strict; the conversion stops when ctx ends.
func HarmonyAnswer(ctx context.Context, schema []byte, strict bool) (string, error) {
	b := grammar.NewCurrentBuilder(ctx, strict)
	before, constraint := harmonyCommon(b, grammar.Literal("analysis"))
	answer := b.AddSchema("response-format", schema)
	b.AddRule("root", before+"* "+grammar.Literal(hChannel+"final")+" "+constraint+"? "+grammar.Literal(hMessage)+" "+answer)
	return b.GBNF()
}
