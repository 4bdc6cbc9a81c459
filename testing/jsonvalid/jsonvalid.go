// Package jsonvalid checks output against a JSON Schema with an
// independent validator (github.com/santhosh-tekuri/jsonschema, formats
// asserted), for the structured-output tests: never batchd's own code.
package jsonvalid

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validate reports whether out parses as JSON and is valid under schema.
func Validate(schema, out []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("the schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		return fmt.Errorf("the schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return fmt.Errorf("the output does not parse: %w", err)
	}
	return sch.Validate(inst)
}
