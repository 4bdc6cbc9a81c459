package httpapi

import (
	"encoding/json"
	"strings"

	"github.com/batchd/batchd/ipc/wire"
)

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// structuredFrom maps the structured-output fields of every API batchd
// speaks to a submit's: OpenAI's response_format (json_object,
// json_schema with strict), llama.cpp's grammar and json_schema, vLLM's
// structured_outputs (json, regex, choice, grammar, json_object). One at
// a time; a field that would change what the output must be and that
// batchd cannot honour is a 400 naming it.
func structuredFrom(f *samplingFields, s *wire.Submit) *httpError {
	var given []string
	if rf := f.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		given = append(given, "response_format")
	}
	if f.Grammar != nil && *f.Grammar != "" {
		given = append(given, "grammar")
	}
	if present(f.JSONSchema) {
		given = append(given, "json_schema")
	}
	if len(f.StructuredOutputs) > 0 {
		given = append(given, "structured_outputs")
	}
	switch {
	case len(given) > 1:
		return errInvalid(given[1], "%s: give one way to structure the output", strings.Join(given, " and "))
	case len(given) == 0:
		return nil
	}
	switch given[0] {
	case "grammar":
		s.Grammar = *f.Grammar
	case "json_schema":
		s.JSONSchema, s.JSONSchemaStrict = wire.JSON(f.JSONSchema), new(bool)
	case "response_format":
		return responseFormatTo(f.ResponseFormat, s)
	case "structured_outputs":
		return structuredOutputsTo(f.StructuredOutputs, s)
	}
	return nil
}

func responseFormatTo(rf *responseFormat, s *wire.Submit) *httpError {
	switch rf.Type {
	case "json_object":
		if present(rf.Schema) { // llama.cpp's extension
			s.JSONSchema = wire.JSON(rf.Schema)
		} else {
			s.JSONObject = true
		}
	case "json_schema":
		if rf.JSONSchema == nil || !present(rf.JSONSchema.Schema) {
			return errInvalid("response_format", "response_format json_schema: want json_schema.schema")
		}
		s.JSONSchema = wire.JSON(rf.JSONSchema.Schema)
		s.JSONSchemaStrict = rf.JSONSchema.Strict
		if s.JSONSchemaStrict == nil {
			// OpenAI's default: keywords the grammar cannot enforce are
			// ignored unless the client asks strict: true (as llama.cpp
			// and vLLM treat them too); what it can enforce it enforces.
			s.JSONSchemaStrict = new(bool)
		}
	default:
		return errInvalid("response_format", "response_format type %q: want text, json_object or json_schema", rf.Type)
	}
	return nil
}

func structuredOutputsTo(so map[string]json.RawMessage, s *wire.Submit) *httpError {
	var set []string
	for k, v := range so {
		if present(v) && string(v) != "false" {
			set = append(set, k)
		}
	}
	if len(set) != 1 {
		return errInvalid("structured_outputs", "structured_outputs: give exactly one of json, regex, choice, grammar, json_object")
	}
	v := so[set[0]]
	var str string
	isString := json.Unmarshal(v, &str) == nil
	switch set[0] {
	case "json":
		if isString { // a schema as JSON text
			v = json.RawMessage(str)
		}
		s.JSONSchema, s.JSONSchemaStrict = wire.JSON(v), new(bool)
	case "regex":
		if !isString {
			return errInvalid("structured_outputs", "structured_outputs.regex: want a string")
		}
		s.Regex = str
	case "grammar":
		if !isString {
			return errInvalid("structured_outputs", "structured_outputs.grammar: want a GBNF string")
		}
		s.Grammar = str
	case "choice":
		if json.Unmarshal(v, &s.Choice) != nil || len(s.Choice) == 0 {
			return errInvalid("structured_outputs", "structured_outputs.choice: want a list of strings")
		}
	case "json_object":
		s.JSONObject = true
	default:
		return errInvalid("structured_outputs", "structured_outputs.%s is not supported (json, regex, choice, grammar, json_object are)", set[0])
	}
	return nil
}
