package toolcall

import (
	"strings"

	"github.com/batchd/batchd/jsontext"
)

// A Qwen3-Coder call writes each argument as text between tags, so the
// JSON type of a value comes from its parameter's schema: a string
// parameter's text is the string, any other's is JSON, and one that may be
// either is JSON when it reads as JSON of an allowed type, else text (as
// llama.cpp v0.5.0's Qwen3-Coder handler and vLLM's parser type them).

// typeSet is a set of JSON types a schema allows.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBool
	tInteger
	tNumber
	tString
	tArray
	tObject
	tAll = tNull | tBool | tInteger | tNumber | tString | tArray | tObject
)

// maxSchemaWalk bounds the schema nodes one parameter's types visit ($refs
// and nested anyOf included), so a hostile schema costs little.
const maxSchemaWalk = 256

// schemaTypes is the types schema v allows, its local $refs resolved
// against root.
func schemaTypes(v, root jsontext.Value, budget *int) typeSet {
	if *budget--; *budget < 0 || v.Kind != jsontext.Object {
		return tAll
	}
	if t, ok := v.Get("type"); ok {
		var s typeSet
		switch t.Kind {
		case jsontext.String:
			s = typeNamed(t.Text)
		case jsontext.Array:
			for _, x := range t.Items {
				if x.Kind == jsontext.String {
					s |= typeNamed(x.Text)
				}
			}
		}
		if s != 0 {
			return s
		}
	}
	if c, ok := v.Get("const"); ok {
		return typeOf(c)
	}
	if e, ok := v.Get("enum"); ok && e.Kind == jsontext.Array && len(e.Items) > 0 {
		var s typeSet
		for _, x := range e.Items {
			s |= typeOf(x)
		}
		return s
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if a, ok := v.Get(k); ok && a.Kind == jsontext.Array && len(a.Items) > 0 {
			var s typeSet
			for _, x := range a.Items {
				s |= schemaTypes(x, root, budget)
			}
			return s
		}
	}
	if a, ok := v.Get("allOf"); ok && a.Kind == jsontext.Array && len(a.Items) > 0 {
		s := tAll
		for _, x := range a.Items {
			s &= schemaTypes(x, root, budget)
		}
		return s
	}
	if r, ok := v.Get("$ref"); ok && r.Kind == jsontext.String {
		if target, ok := localRef(root, r.Text); ok {
			return schemaTypes(target, root, budget)
		}
	}
	if _, ok := v.Get("properties"); ok {
		return tObject
	}
	if _, ok := v.Get("items"); ok {
		return tArray
	}
	return tAll
}

var typeNames = map[string]typeSet{"null": tNull, "boolean": tBool, "integer": tInteger, "number": tNumber | tInteger,
	"string": tString, "array": tArray, "object": tObject}

func typeNamed(name string) typeSet { return typeNames[name] }

func typeOf(v jsontext.Value) typeSet {
	switch v.Kind {
	case jsontext.Null:
		return tNull
	case jsontext.Bool:
		return tBool
	case jsontext.Number:
		return tNumber | tInteger
	case jsontext.String:
		return tString
	case jsontext.Array:
		return tArray
	}
	return tObject
}

// localRef finds "#/$defs/x" or "#/definitions/x" (one level) in root.
func localRef(root jsontext.Value, ref string) (jsontext.Value, bool) {
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, p); ok {
			if defs, ok := root.Get(strings.TrimSuffix(strings.TrimPrefix(p, "#/"), "/")); ok {
				return defs.Get(name)
			}
		}
	}
	return jsontext.Value{}, false
}

// xmlParam is one parameter of a tool, as a Qwen3-Coder call writes it.
type xmlParam struct {
	Name     string
	Types    typeSet
	Schema   jsontext.Value // the property's schema
	Required bool
	// Choices are a string parameter's enum (or const), its $refs
	// followed; nil where any text goes.
	Choices []string
}

// xmlParams are a tool's parameters in the order its schema gives them.
func xmlParams(params []byte) []xmlParam {
	root, err := jsontext.Parse(params)
	if err != nil {
		return nil
	}
	props, _ := root.Get("properties")
	var out []xmlParam
	required := map[string]bool{}
	if r, ok := root.Get("required"); ok {
		for _, x := range r.Items {
			required[x.Text] = x.Kind == jsontext.String
		}
	}
	for _, m := range props.Members {
		budget := maxSchemaWalk
		x := xmlParam{Name: m.Key, Types: schemaTypes(m.Value, root, &budget), Schema: m.Value, Required: required[m.Key]}
		if x.Types == tString {
			x.Choices = stringChoices(m.Value, root)
		}
		out = append(out, x)
	}
	return out
}

// stringChoices are the strings an enum or const allows, its $refs
// followed (nil if it has neither).
func stringChoices(v, root jsontext.Value) []string {
	for range 8 {
		r, ok := v.Get("$ref")
		if !ok || r.Kind != jsontext.String {
			break
		}
		if v, ok = localRef(root, r.Text); !ok {
			return nil
		}
	}
	var vals []jsontext.Value
	if c, ok := v.Get("const"); ok {
		vals = []jsontext.Value{c}
	} else if e, ok := v.Get("enum"); ok {
		vals = e.Items
	}
	var out []string
	for _, x := range vals {
		if x.Kind != jsontext.String {
			return nil
		}
		out = append(out, x.Text)
	}
	return out
}

// argJSON is a parameter's text as JSON: a string for a string parameter
// (or one whose text is not JSON of an allowed type), else the JSON,
// compacted.
func argJSON(text string, types typeSet) string {
	if types != tString {
		if v, ok := jsonOfTypes(text, types); ok {
			return v
		}
	}
	return jsontext.Quote(text)
}

// jsonOfTypes is text as compact JSON when it is one JSON value of types
// (the string alternative aside: text that may be a string stays text).
func jsonOfTypes(text string, types typeSet) (string, bool) {
	v, err := jsontext.Parse([]byte(strings.TrimSpace(text)))
	if err != nil || v.Kind == jsontext.String || types&typeOf(v) == 0 {
		return "", false
	}
	return string(jsontext.Append(nil, v)), true
}
