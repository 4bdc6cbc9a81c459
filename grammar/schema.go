package grammar

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// SchemaError is a JSON Schema that cannot be turned into a grammar: not a
// schema, or (with Strict) a keyword batchd cannot enforce. Path is where,
// as a JSON pointer; Keyword names it.
type SchemaError struct {
	Path, Keyword, Msg string
}

func (e *SchemaError) Error() string {
	at := ""
	if e.Path != "" {
		at = " at " + e.Path
	}
	if e.Keyword != "" {
		return fmt.Sprintf("json_schema: %q%s: %s", e.Keyword, at, e.Msg)
	}
	return fmt.Sprintf("json_schema%s: %s", at, e.Msg)
}

// SchemaOptions shape FromSchema.
type SchemaOptions struct {
	// Strict refuses a keyword that would change what valid output is but
	// that the grammar cannot enforce (uniqueItems, minProperties, number
	// bounds, an unknown format, ...), naming it; false ignores such
	// keywords, as OpenAI's strict: false and llama.cpp do.
	Strict bool
	legacy bool // the older build's dialect (tests of its references)
}

// SchemaGBNF turns a JSON Schema into GBNF as llama.cpp's
// json-schema-to-grammar does (same rules, names and whitespace), where
// batchd does not enforce more: dates are real dates, and a oneOf whose
// alternatives may overlap is refused, not read as anyOf.
//
// The conversion is bounded (maxConvertWork: the bytes of rules it writes,
// counting each again when rebuilt) and stops with ctx's error when ctx
// ends: a schema is the client's, and so is the time spent on it.
func SchemaGBNF(ctx context.Context, schema []byte, o SchemaOptions) (string, error) {
	src, _, err := convertSchema(ctx, schema, o)
	return src, err
}

// FromSchema compiles a JSON Schema into a grammar (SchemaGBNF, then Parse).
func FromSchema(ctx context.Context, schema []byte, o SchemaOptions) (*Grammar, error) {
	_, g, err := convertSchema(ctx, schema, o)
	return g, err
}

// convertSchema is SchemaGBNF with the grammar it parsed to check its text.
func convertSchema(ctx context.Context, schema []byte, o SchemaOptions) (string, *Grammar, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, fmt.Errorf("converting the schema stopped: %w", err)
	}
	v, err := parseValue(schema)
	if err != nil {
		return "", nil, &SchemaError{Msg: "not JSON: " + err.Error()}
	}
	if v.kind != vObject && v.kind != vBool {
		return "", nil, &SchemaError{Msg: "a schema is an object (or true)"}
	}
	if err := checkSchema(v, "", o.Strict); err != nil {
		return "", nil, err
	}
	c := newConverter(ctx, o.Strict)
	if o.legacy {
		c.setLegacy()
	}
	c.root = v
	if err := c.resolveRefs(v); err != nil {
		return "", nil, err
	}
	c.visit(v, "")
	if c.err != nil {
		return "", nil, c.err
	}
	out := c.format()
	g, err := Parse(out)
	switch {
	case errors.Is(err, ErrTooComplex):
		return "", nil, fmt.Errorf("json_schema: %w", err)
	case err != nil: // a $ref to itself, say
		return "", nil, &SchemaError{Msg: err.Error()}
	}
	return out, g, nil
}

// converter is llama.cpp's SchemaConverter: rules by name, resolved refs.
type converter struct {
	root      value
	rules     map[string]string
	refs      map[string]value
	resolving map[string]bool
	strict    bool
	err       error
	ctx       context.Context
	work      int  // bytes of rules written so far, rebuilt ones again (see spend)
	size      int  // bytes of the distinct rules
	checked   int  // work at the last look at ctx
	legacy    bool // the older build's dialect (schema_rules.go)
}

// maxConvertWork bounds one conversion: the bytes of rules it writes,
// each counted again whenever it is built again. A grammar's text may be
// MaxSourceBytes; the converter may write several times that while it
// shares rules, never more.
const maxConvertWork = 8 * MaxSourceBytes

func newConverter(ctx context.Context, strict bool) *converter {
	if ctx == nil {
		ctx = context.Background()
	}
	return &converter{rules: map[string]string{"space": spaceRule}, refs: map[string]value{},
		resolving: map[string]bool{}, strict: strict, ctx: ctx}
}

// setLegacy switches to the older build's dialect.
func (c *converter) setLegacy() {
	c.legacy = true
	c.rules["space"] = legacySpaceRule
}

// valueEnd is what follows a value's own text in its rule: space in the
// legacy dialect, nothing in the current one.
func (c *converter) valueEnd() string {
	if c.legacy {
		return " space"
	}
	return ""
}

// closing is a bracket that closes an object or array: space before it in
// the current dialect, after it in the legacy one.
func (c *converter) closing(bracket string) string {
	if c.legacy {
		return ` "` + bracket + `" space`
	}
	return ` space "` + bracket + `"`
}

// spend counts n bytes of work: past the bound the conversion fails with
// ErrTooComplex, and every 64 KiB it looks whether its context ended.
func (c *converter) spend(n int) bool {
	if c.err != nil {
		return false
	}
	c.work += n
	if c.work > maxConvertWork {
		c.err = fmt.Errorf("%w: converting this schema would write more than %d MiB of grammar rules", ErrTooComplex, maxConvertWork>>20)
		return false
	}
	if c.work-c.checked >= 64<<10 {
		c.checked = c.work
		if err := c.ctx.Err(); err != nil {
			c.err = fmt.Errorf("converting the schema stopped: %w", err)
			return false
		}
	}
	return true
}

func (c *converter) fail(path, keyword, format string, args ...any) string {
	if c.err == nil {
		c.err = &SchemaError{Path: path, Keyword: keyword, Msg: fmt.Sprintf(format, args...)}
	}
	return "space"
}

var (
	invalidRuleChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)
	uuidFormat       = regexp.MustCompile(`^uuid[1-5]?$`)
)

// addRule names rule after name, numbering it when another rule took the
// name, and returns the name.
func (c *converter) addRule(name, rule string) string {
	c.spend(len(name) + len(rule))
	esc := invalidRuleChars.ReplaceAllString(name, "-")
	key := esc
	if old, ok := c.rules[esc]; ok && old != rule {
		for i := 0; ; i++ {
			key = fmt.Sprintf("%s%d", esc, i)
			if old, ok := c.rules[key]; !ok || old == rule {
				break
			}
		}
	}
	if _, ok := c.rules[key]; !ok {
		if c.size += len(key) + len(rule) + 6; c.size > MaxSourceBytes && c.err == nil {
			c.err = fmt.Errorf("%w: the grammar for this schema passes %d bytes of GBNF", ErrTooComplex, MaxSourceBytes)
		}
	}
	c.rules[key] = rule
	return key
}

func (c *converter) format() string {
	names := make([]string, 0, len(c.rules))
	for n := range c.rules {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s ::= %s\n", n, c.rules[n])
	}
	return b.String()
}

// resolveRefs records what every local $ref points to.
func (c *converter) resolveRefs(v value) error {
	switch v.kind {
	case vArray:
		for _, x := range v.arr {
			if err := c.resolveRefs(x); err != nil {
				return err
			}
		}
	case vObject:
		if ref, ok := v.get("$ref"); ok && ref.kind == vString {
			if _, done := c.refs[ref.str]; done {
				return nil
			}
			if !strings.HasPrefix(ref.str, "#/") && ref.str != "#" {
				return &SchemaError{Keyword: "$ref", Msg: fmt.Sprintf("%q: only local references (#/$defs/...) are supported", ref.str)}
			}
			target, err := pointer(c.root, ref.str)
			if err != nil {
				return err
			}
			c.refs[ref.str] = target
			return nil
		}
		for _, m := range v.obj {
			if err := c.resolveRefs(m.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// pointer follows a local JSON pointer ("#/$defs/x") from root.
func pointer(root value, ref string) (value, error) {
	target := root
	for _, sel := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		sel = strings.ReplaceAll(strings.ReplaceAll(sel, "~1", "/"), "~0", "~")
		next, ok := target.get(sel)
		if !ok {
			return value{}, &SchemaError{Keyword: "$ref", Msg: fmt.Sprintf("%q: %q not found", ref, sel)}
		}
		target = next
	}
	return target, nil
}

func (c *converter) resolveRef(ref string) string {
	if !c.legacy {
		// "ref" and the whole pointer: #/$defs/item is ref-defs-item.
		frag := ref
		if i := strings.IndexByte(ref, '#'); i >= 0 {
			frag = ref[i+1:]
		}
		name := "ref" + invalidRuleChars.ReplaceAllString(frag, "-")
		if _, ok := c.rules[name]; !ok && !c.resolving[ref] {
			c.resolving[ref] = true
			name = c.visit(c.refs[ref], name)
			delete(c.resolving, ref)
		}
		return name
	}
	// The name a recursive reference uses before its rule exists: what
	// visit will name the rule (a reserved name gets a dash).
	name := invalidRuleChars.ReplaceAllString(ref[strings.LastIndexByte(ref, '/')+1:], "-")
	if name == "" || name == "-" {
		name = "ref"
	}
	if reservedNames[name] && c.resolving[ref] {
		return name + "-"
	}
	if _, ok := c.rules[name]; !ok && !c.resolving[ref] {
		c.resolving[ref] = true
		name = c.visit(c.refs[ref], name)
		delete(c.resolving, ref)
	}
	return name
}

func dashed(name, suffix string) string {
	if name == "" {
		return suffix
	}
	return name + "-" + suffix
}

// visit returns the rule (a name) for schema, named after name.
func (c *converter) visit(s value, name string) string {
	if c.err != nil {
		return "space"
	}
	if s.kind == vBool { // true: any value; false: nothing
		if !s.b {
			return c.fail("", "", "the schema false admits no value")
		}
		s = value{kind: vObject}
	}
	ruleName := name
	if reservedNames[name] {
		ruleName = name + "-"
	} else if name == "" {
		ruleName = "root"
	}
	typ, _ := s.get("type")
	typeIs := func(names ...string) bool {
		if !s.has("type") {
			return slices.Contains(names, "")
		}
		return typ.kind == vString && slices.Contains(names, typ.str)
	}
	switch {
	case s.has("$ref"):
		ref, _ := s.get("$ref")
		return c.addRule(ruleName, c.resolveRef(ref.str))
	case s.has("oneOf") || s.has("anyOf"):
		alts, _ := s.get("anyOf")
		if one, ok := s.get("oneOf"); ok {
			alts = one
			if c.strict && !c.disjoint(one.arr) {
				return c.fail("", "oneOf", "its alternatives may match the same value, and a grammar cannot make the output match exactly one; use anyOf")
			}
		}
		return c.addRule(ruleName, c.union(name, alts.arr))
	case typ.kind == vArray:
		var alts []value
		for _, t := range typ.arr {
			alt := value{kind: vObject, obj: slices.Clone(s.obj)}
			alt.set("type", t)
			alts = append(alts, alt)
		}
		return c.addRule(ruleName, c.union(name, alts))
	case s.has("const"):
		k, _ := s.get("const")
		return c.addRule(ruleName, c.constant(k)+c.valueEnd())
	case s.has("enum"):
		e, _ := s.get("enum")
		var alts []string
		for _, x := range e.arr {
			alts = append(alts, c.constant(x))
		}
		return c.addRule(ruleName, "("+strings.Join(alts, " | ")+")"+c.valueEnd())
	case typeIs("", "object") && (s.has("properties") || s.has("additionalProperties") && !isTrue(s, "additionalProperties")):
		return c.addRule(ruleName, c.objectRule(s, name))
	case typeIs("", "object", "string") && s.has("allOf"):
		return c.allOf(s, name, ruleName)
	case typeIs("", "array") && (s.has("items") || s.has("prefixItems")):
		return c.arrayRule(s, name, ruleName)
	case typeIs("", "string") && s.has("pattern"):
		p, _ := s.get("pattern")
		return c.pattern(p.str, ruleName)
	}
	return c.scalar(s, typeIs, typ, ruleName)
}

func (c *converter) scalar(s value, typeIs func(...string) bool, typ value, ruleName string) string {
	format, _ := s.get("format")
	switch {
	case typeIs("", "string") && uuidFormat.MatchString(format.str):
		n := format.str
		if ruleName == "root" {
			n = "root"
		}
		return c.addPrimitive(n, "uuid")
	case typeIs("", "string") && stringFormats[format.str+"-string"].rule != "":
		return c.addRule(ruleName, c.addPrimitive(format.str+"-string", format.str+"-string"))
	case typeIs("string") && (s.has("minLength") || s.has("maxLength")):
		char := c.addPrimitive("char", "char")
		lo, _ := s.int("minLength")
		hi, ok := s.int("maxLength")
		if !ok {
			hi = -1
		}
		return c.addRule(ruleName, `"\"" `+c.repetition(char, int(lo), int(hi), "")+` "\""`+c.valueEnd())
	case typeIs("integer") && hasNumberConstraints(s) && !intBoundsOnly(s):
		return c.addRule(ruleName, c.numberRange(s, ruleName, true))
	case typeIs("", "integer") && (s.has("minimum") || s.has("exclusiveMinimum") || s.has("maximum") || s.has("exclusiveMaximum")):
		return c.addRule(ruleName, "("+c.intRange(s)+")"+c.valueEnd())
	case typeIs("number") && hasNumberConstraints(s):
		return c.addRule(ruleName, c.numberRange(s, ruleName, false))
	case typeIs("object") || len(s.obj) == 0:
		return c.addRule(ruleName, c.addPrimitive("object", "object"))
	}
	if typ.kind != vString || primitives[typ.str].rule == "" {
		if !s.has("type") { // annotations only (a description): any value
			return c.addRule(ruleName, c.addPrimitive("value", "value"))
		}
		return c.fail("", "type", "%s: want object, array, string, number, integer, boolean or null", typ.dump())
	}
	n := typ.str
	if ruleName == "root" {
		n = "root"
	}
	return c.addPrimitive(n, typ.str)
}

func isTrue(s value, k string) bool {
	v, ok := s.get(k)
	return ok && v.kind == vBool && v.b
}

// union is the rule of anyOf alternatives.
func (c *converter) union(name string, alts []value) string {
	var out []string
	for i, a := range alts {
		n := fmt.Sprintf("alternative-%d", i)
		if name != "" {
			n = fmt.Sprintf("%s-%d", name, i)
		}
		out = append(out, c.visit(a, n))
	}
	return strings.Join(out, " | ")
}

// constant is the literal of a JSON value.
func (c *converter) constant(v value) string { return formatLiteral(v.dump()) }

// formatLiteral quotes text as a GBNF literal. llama.cpp escapes only \r,
// \n and "; a backslash (JSON's escapes) must be escaped too, or a \t in
// the JSON text would come out as a raw tab.
func formatLiteral(s string) string { return `"` + literalEscaper.Replace(s) + `"` }

var literalEscaper = strings.NewReplacer("\\", "\\\\", "\r", "\\r", "\n", "\\n", "\"", "\\\"")
