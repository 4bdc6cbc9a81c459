package grammar

import (
	"context"
	"fmt"
	"strings"
)

// Builder assembles one grammar from rules and schemas, as llama.cpp's
// common_grammar_builder does for its tool-call formats: every schema's
// rules land in the same grammar, shared rules (integer, string) once.
type Builder struct {
	c      *converter
	scopes int
}

// NewBuilder starts a grammar; strict refuses schema keywords the grammar
// cannot enforce (SchemaOptions.Strict). Its schemas' conversion is bounded
// as SchemaGBNF's, all together, and stops when ctx ends.
//
// A builder writes the legacy dialect (schema_rules.go): the tool-call
// formats are the older llama.cpp build's chat handlers, whose grammars
// their references hold.
func NewBuilder(ctx context.Context, strict bool) *Builder {
	c := newConverter(ctx, strict)
	c.setLegacy()
	return &Builder{c: c}
}

// NewCurrentBuilder starts a grammar whose schemas convert as SchemaGBNF
// converts them (the current dialect): for structured output wrapped in a
// format's markup.
func NewCurrentBuilder(ctx context.Context, strict bool) *Builder {
	return &Builder{c: newConverter(ctx, strict)}
}

// SetStrict sets whether the schemas added next refuse keywords the
// grammar cannot enforce.
func (b *Builder) SetStrict(strict bool) { b.c.strict = strict }

// AddSchema adds the rules of a JSON Schema (its $refs resolved within
// it) and returns the name of its rule ("root" is the grammar's start).
func (b *Builder) AddSchema(name string, schema []byte) string {
	c := b.c
	if c.err != nil {
		return "space"
	}
	v, err := parseValue(schema)
	if err != nil {
		c.err = &SchemaError{Msg: "not JSON: " + err.Error()}
		return "space"
	}
	if err := checkSchema(v, "", c.strict); err != nil {
		c.err = err
		return "space"
	}
	c.root = v
	if err := c.resolveRefs(v); err != nil {
		c.err = err
		return "space"
	}
	if name == "root" {
		name = ""
	}
	return c.visit(v, name)
}

// ResolveRefs resolves the local $refs of schema against schema itself
// (a tool's parameters, before they are wrapped in a larger schema) and
// returns it with those refs renamed into a scope of their own, so that two
// schemas' "#/$defs/x" stay apart.
func (b *Builder) ResolveRefs(schema []byte) ([]byte, error) {
	v, err := parseValue(schema)
	if err != nil {
		return nil, &SchemaError{Msg: "not JSON: " + err.Error()}
	}
	if !hasRef(v) {
		return schema, nil
	}
	b.scopes++
	scope := fmt.Sprintf("#scope%d", b.scopes)
	renameRefs(&v, scope)
	c := b.c
	saved := c.root
	c.root = v
	err = c.resolveScoped(v, scope)
	c.root = saved
	if err != nil {
		return nil, err
	}
	return []byte(v.dump()), nil
}

func hasRef(v value) bool {
	for _, x := range v.arr {
		if hasRef(x) {
			return true
		}
	}
	for _, m := range v.obj {
		if m.key == "$ref" || hasRef(m.val) {
			return true
		}
	}
	return false
}

// renameRefs prefixes every local $ref ("#..." ) with scope.
func renameRefs(v *value, scope string) {
	for i := range v.arr {
		renameRefs(&v.arr[i], scope)
	}
	for i := range v.obj {
		m := &v.obj[i]
		if m.key == "$ref" && m.val.kind == vString && strings.HasPrefix(m.val.str, "#") {
			m.val.str = scope + m.val.str
			continue
		}
		renameRefs(&m.val, scope)
	}
}

// resolveScoped records the target of every scoped $ref in v, looked up
// in c.root with the scope taken off.
func (c *converter) resolveScoped(v value, scope string) error {
	for _, x := range v.arr {
		if err := c.resolveScoped(x, scope); err != nil {
			return err
		}
	}
	for _, m := range v.obj {
		if m.key == "$ref" && m.val.kind == vString && strings.HasPrefix(m.val.str, scope) {
			ref := m.val.str
			if _, done := c.refs[ref]; done {
				continue
			}
			local := strings.TrimPrefix(ref, scope)
			if !strings.HasPrefix(local, "#/") && local != "#" {
				return &SchemaError{Keyword: "$ref", Msg: fmt.Sprintf("%q: only local references (#/$defs/...) are supported", local)}
			}
			target, err := pointer(c.root, local)
			if err != nil {
				return err
			}
			c.refs[ref] = target
			continue
		}
		if err := c.resolveScoped(m.val, scope); err != nil {
			return err
		}
	}
	return nil
}

// AddRule adds a rule in GBNF and returns its name (numbered if another
// rule has the name).
func (b *Builder) AddRule(name, rule string) string { return b.c.addRule(name, rule) }

// Literal quotes text as a GBNF literal.
func Literal(text string) string { return formatLiteral(text) }

// GBNF returns the grammar, or the first error a schema gave.
func (b *Builder) GBNF() (string, error) {
	if b.c.err != nil {
		return "", b.c.err
	}
	out := b.c.format()
	if _, err := Parse(out); err != nil {
		return "", &SchemaError{Msg: err.Error()}
	}
	return out, nil
}
