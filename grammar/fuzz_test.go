package grammar

import (
	"context"
	"errors"
	"strings"
	"testing"
)

var gbnfSeeds = []string{
	`root ::= "yes" | "no"`,
	"root ::= expr\nexpr ::= term (ws [-+*/] ws term){0,3}\nterm ::= num | \"(\" expr \")\"\nnum ::= \"-\"? [0-9]{1,3}\nws ::= \" \"?\n",
	"root ::= [^\"\\\\\\x7F\\x00-\\x1F]* \"\\u00e9\" . # c\n",
	"root ::= (\"a\" | b)+ b\nb ::= [a-z]{2,}\n",
}

// FuzzParseGBNF: whatever the text, Parse returns (a grammar or a typed
// error) and the grammar it returns can be walked.
func FuzzParseGBNF(f *testing.F) {
	for _, s := range gbnfSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrTooComplex) && !strings.Contains(err.Error(), "left-recursive") {
				t.Fatalf("%q: untyped error %v", src, err)
			}
			return
		}
		m := g.NewMatcher()
		for _, piece := range []string{"a", "1", "\"", " ", "é"} {
			if m.Allows([]byte(piece)) {
				if err := m.Accept([]byte(piece)); err != nil && !errors.Is(err, ErrTooComplex) {
					t.Fatalf("%q: Accept(%q) after Allows: %v", src, piece, err)
				}
			}
		}
	})
}

// FuzzSchemaGBNF: whatever the schema, the converter returns GBNF that
// parses, or a typed error.
func FuzzSchemaGBNF(f *testing.F) {
	for _, s := range []string{`{"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]}`,
		`{"anyOf": [{"type": "integer", "minimum": -5, "maximum": 300}, {"type": "null"}]}`,
		`{"type": "array", "items": {"enum": ["x", 1, null]}, "minItems": 1, "maxItems": 4}`,
		`{"$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}`,
		`{"type": "string", "pattern": "^(ab|[c-e]+)\\d{2}$"}`, `{"type": "string", "format": "date-time"}`,
		`{"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}}`} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, schema []byte, strict bool) {
		src, err := SchemaGBNF(context.Background(), schema, SchemaOptions{Strict: strict})
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("%q: untyped error %v", schema, err)
			}
			return
		}
		if _, err := Parse(src); err != nil && !errors.Is(err, ErrTooComplex) {
			t.Fatalf("%q gave GBNF that does not parse: %v\n%s", schema, err, src)
		}
	})
}
