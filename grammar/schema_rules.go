package grammar

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The converter writes one of two dialects of llama.cpp's
// json-schema-to-grammar. The current one is llama.cpp v0.5.0's, the
// reference (SchemaGBNF, FromSchema): a value's rule ends with the value
// itself, and whitespace goes before a closing bracket. The legacy one is
// the older build's (commit c392e509), in which every value's rule ends
// with space: the tool-call grammars (Builder) keep it, since their
// formats are that build's chat handlers and their references its text.

// spaceRule is the whitespace between JSON tokens: nothing, one space, or
// one or two newlines and up to 20 spaces or tabs (the legacy: one newline).
const (
	spaceRule       = `| " " | "\n"{1,2} [ \t]{0,20}`
	legacySpaceRule = `| " " | "\n" [ \t]{0,20}`
)

type builtin struct {
	rule string
	deps []string
}

// primitives and stringFormats are llama.cpp's built-in rules, but for
// date, which here admits only real dates (llama.cpp's takes 2023-02-31),
// and number, whose exponent here has at most two digits (NumberRule), so
// that every number is a finite double: llama.cpp's sixteen let a model
// write 1e418418, which a parser can only read as infinity (a tool call's
// required number came back null).
var primitives = map[string]builtin{
	"boolean":       {`("true" | "false")`, nil},
	"decimal-part":  {`[0-9]{1,16}`, nil},
	"integral-part": {`[0] | [1-9] [0-9]{0,15}`, nil},
	"number":        {NumberRule, []string{"integral-part", "decimal-part"}},
	"integer":       {`("-"? integral-part)`, []string{"integral-part"}},
	"value":         {`object | array | string | number | boolean | null`, []string{"object", "array", "string", "number", "boolean", "null"}},
	"object":        {`"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"`, []string{"string", "value"}},
	"array":         {`"[" space ( value ("," space value)* )? space "]"`, []string{"value"}},
	"uuid":          {`"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\""`, nil},
	"char":          {`[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})`, nil},
	"string":        {`"\"" char* "\""`, []string{"char"}},
	"null":          {`"null"`, nil},
}

// NumberRule is batchd's number (see primitives); LlamaCppNumberRule is
// llama.cpp v0.5.0's, for tests that compare grammars with its own.
const (
	NumberRule         = `("-"? integral-part) ("." decimal-part)? ([eE] [-+]? [0-9]{1,2})?`
	LlamaCppNumberRule = `("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?`
)

var stringFormats = map[string]builtin{
	"date":             {`[0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [1-2] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | ( [0-9] [0-9] ( "0" [48] | [2468] [048] | [13579] [26] ) | ( "0" [048] | [2468] [048] | [13579] [26] ) "00" ) "-02-29"`, nil},
	"time":             {`([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`, nil},
	"date-time":        {`date "T" time`, []string{"date", "time"}},
	"date-string":      {`"\"" date "\""`, []string{"date"}},
	"time-string":      {`"\"" time "\""`, []string{"time"}},
	"date-time-string": {`"\"" date-time "\""`, []string{"date-time"}},
}

// legacyRule is a built-in rule as the legacy dialect writes it: a value
// followed by space, brackets closed without space before them.
func legacyRule(kind, rule string) string {
	switch kind {
	case "object", "array":
		return strings.Replace(rule, ` space "`+map[string]string{"object": "}", "array": "]"}[kind]+`"`, ` "`+map[string]string{"object": "}", "array": "]"}[kind]+`" space`, 1)
	case "boolean", "number", "integer", "uuid", "string", "null", "date-string", "time-string", "date-time-string":
		return rule + " space"
	}
	return rule
}

var reservedNames = func() map[string]bool {
	m := map[string]bool{"root": true, "dot": true}
	for n := range primitives {
		m[n] = true
	}
	for n := range stringFormats {
		m[n] = true
	}
	return m
}()

// addPrimitive adds built-in rule kind under name, with what it needs.
func (c *converter) addPrimitive(name, kind string) string {
	b, ok := primitives[kind]
	if !ok {
		b = stringFormats[kind]
	}
	rule := b.rule
	if c.legacy {
		rule = legacyRule(kind, rule)
	}
	n := c.addRule(name, rule)
	for _, dep := range b.deps {
		if _, ok := c.rules[dep]; !ok {
			c.addPrimitive(dep, dep)
		}
	}
	return n
}

// repetition is llama.cpp's _build_repetition: item min to max times
// (max < 0: unbounded), separated by sep when given. At most zero times is
// nothing; the legacy dialect wrote it {0,0} without a separator, as that
// build did.
func (c *converter) repetition(item string, lo, hi int, sep string) string {
	if hi == 0 && (sep != "" || !c.legacy) {
		return ""
	}
	if lo == 0 && hi == 1 {
		return item + "?"
	}
	if sep == "" {
		switch {
		case lo == 1 && hi < 0:
			return item + "+"
		case lo == 0 && hi < 0:
			return item + "*"
		case hi < 0:
			return fmt.Sprintf("%s{%d,}", item, lo)
		}
		return fmt.Sprintf("%s{%d,%d}", item, lo, hi)
	}
	nhi := -1
	if hi >= 0 {
		nhi = hi - 1
	}
	res := item + " " + c.repetition("("+sep+" "+item+")", max(lo-1, 0), nhi, "")
	if lo == 0 {
		return "(" + res + ")?"
	}
	return res
}

// objectRule is llama.cpp's _build_object_rule: required properties in
// order, then optional ones in order, then (additionalProperties) others.
func (c *converter) objectRule(s value, name string) string {
	props, _ := s.get("properties")
	required := map[string]bool{}
	if r, ok := s.get("required"); ok {
		for _, x := range r.arr {
			required[x.str] = true
		}
	}
	var addl *value
	if a, ok := s.get("additionalProperties"); ok {
		addl = &a
	}
	return c.buildObject(props.obj, required, name, addl)
}

func (c *converter) buildObject(props []member, required map[string]bool, name string, addl *value) string {
	kv := map[string]string{}
	var req, opt []string
	for _, p := range props {
		rule := c.visit(p.val, dashed(name, p.key))
		key := value{kind: vString, str: p.key}
		kv[p.key] = c.addRule(dashed(name, p.key)+"-kv", formatLiteral(key.dump())+` space ":" space `+rule)
		if required[p.key] {
			req = append(req, p.key)
		} else {
			opt = append(opt, p.key)
		}
	}
	if addl != nil && !(addl.kind == vBool && !addl.b) {
		sub := dashed(name, "additional")
		var valueRule, keyRule string
		if addl.kind == vObject {
			valueRule = c.visit(*addl, sub+"-value")
		} else {
			valueRule = c.addPrimitive("value", "value")
		}
		if len(props) == 0 {
			keyRule = c.addPrimitive("string", "string")
		} else {
			names := make([]string, len(props))
			for i, p := range props {
				names[i] = p.key
			}
			keyRule = c.addRule(sub+"-k", c.notStrings(names))
		}
		kv["*"] = c.addRule(sub+"-kv", keyRule+` ":" space `+valueRule)
		opt = append(opt, "*")
	}
	var b strings.Builder
	b.WriteString(`"{" space `)
	for i, k := range req {
		if i > 0 {
			b.WriteString(` "," space `)
		}
		b.WriteString(kv[k])
	}
	if len(opt) > 0 {
		b.WriteString(" (")
		if len(req) > 0 {
			b.WriteString(` "," space ( `)
		}
		b.WriteString(strings.Join(c.optionalChains(opt, kv, name), " | "))
		if len(req) > 0 {
			b.WriteString(" )")
		}
		b.WriteString(" )?")
	}
	b.WriteString(c.closing("}"))
	return b.String()
}

// optionalChains is llama.cpp's alternatives of get_recursive_refs over
// every suffix of the optional keys: alternative i is key i, then each
// later key optional, through the rule "KEY-rest" that holds the chain
// after it. Those rules are the same for every alternative, so each is
// built once, from the last key back (the order llama.cpp adds them in,
// so names and their numbering match): linear in the keys, where calling
// the recursion per suffix was quadratic (4,000 optional properties took
// seconds).
func (c *converter) optionalChains(opt []string, kv map[string]string, name string) []string {
	n := len(opt)
	comma := func(k string) string { return `( "," space ` + kv[k] + ` )` }
	rest := make([]string, n) // rest[j]: the rule of the keys after j, optional
	for j := n - 2; j >= 0; j-- {
		k := opt[j+1]
		r := comma(k) + "?"
		if k == "*" {
			r = comma(k) + "*"
		}
		if j+2 < n {
			r += " " + rest[j+1]
		}
		rest[j] = c.addRule(dashed(name, opt[j])+"-rest", r)
	}
	alts := make([]string, n)
	for i, k := range opt {
		a := kv[k]
		if k == "*" {
			a += " " + comma(k) + "*"
		}
		if i+1 < n {
			a += " " + rest[i]
		}
		alts[i] = a
	}
	return alts
}

// notStrings is a JSON string that is none of names, as llama.cpp's
// _not_strings builds it from their trie (it also refuses their proper
// prefixes: a subset of the language, never a wider one).
func (c *converter) notStrings(names []string) string {
	type node struct {
		children map[rune]*node
		end      bool
	}
	root := &node{children: map[rune]*node{}}
	for _, n := range names {
		at := root
		for _, r := range n {
			next := at.children[r]
			if next == nil {
				next = &node{children: map[rune]*node{}}
				at.children[r] = next
			}
			at = next
		}
		at.end = true
	}
	char := c.addPrimitive("char", "char")
	var b strings.Builder
	b.WriteString(`["] ( `)
	var visit func(n *node)
	visit = func(n *node) {
		keys := make([]rune, 0, len(n.children))
		for r := range n.children {
			keys = append(keys, r)
		}
		slices.Sort(keys)
		var rejects strings.Builder
		for i, r := range keys {
			child := n.children[r]
			rejects.WriteString(classChar(r))
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString("[" + classChar(r) + "]")
			if len(child.children) > 0 {
				b.WriteString(" (")
				visit(child)
				b.WriteString(")")
			} else if child.end {
				b.WriteString(" " + char + "+")
			}
		}
		if len(keys) > 0 {
			b.WriteString(" | ")
			b.WriteString(`[^"` + rejects.String() + "] " + char + "*")
		}
	}
	visit(root)
	b.WriteString(" )")
	if !root.end {
		b.WriteString("?")
	}
	b.WriteString(` ["]`)
	if c.legacy {
		b.WriteString(" space")
	}
	return b.String()
}

// classChar writes r for inside a GBNF character class.
func classChar(r rune) string {
	switch r {
	case '\\', ']', '[', '-', '"', '^':
		return `\` + string(r)
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x20 {
		return fmt.Sprintf(`\x%02X`, r)
	}
	return string(r)
}

// arrayRule is a tuple (prefixItems, or items as a list) or a repetition
// of items between minItems and maxItems.
func (c *converter) arrayRule(s value, name, ruleName string) string {
	items, ok := s.get("items")
	if !ok || items.kind == vArray && len(items.arr) == 0 {
		items, _ = s.get("prefixItems")
	}
	if items.kind == vArray {
		var parts []string
		for i, it := range items.arr {
			parts = append(parts, c.visit(it, dashed(name, fmt.Sprintf("tuple-%d", i))))
		}
		return c.addRule(ruleName, `"[" space `+strings.Join(parts, ` "," space `)+c.closing("]"))
	}
	item := c.visit(items, dashed(name, "item"))
	lo, _ := s.int("minItems")
	hi, ok := s.int("maxItems")
	if !ok {
		hi = -1
	}
	return c.addRule(ruleName, `"[" space `+c.repetition(item, int(lo), int(hi), `"," space`)+c.closing("]"))
}

// allOf merges objects' properties (anyOf members optional) or
// intersects enums, as llama.cpp does.
func (c *converter) allOf(s value, name, ruleName string) string {
	var props []member
	required := map[string]bool{}
	var enums [][]value
	add := func(comp value, isRequired bool) {
		if ref, ok := comp.get("$ref"); ok {
			comp = c.refs[ref.str]
		}
		if p, ok := comp.get("properties"); ok {
			for _, m := range p.obj {
				props = append(props, m)
				if isRequired {
					required[m.key] = true
				}
			}
		}
		if e, ok := comp.get("enum"); ok {
			enums = append(enums, e.arr)
		}
	}
	all, _ := s.get("allOf")
	for _, t := range all.arr {
		if any, ok := t.get("anyOf"); ok {
			for _, tt := range any.arr {
				add(tt, false)
			}
		} else {
			add(t, true)
		}
	}
	if len(enums) > 0 {
		common := map[string]value{}
		for _, v := range enums[0] {
			common[v.dump()] = v
		}
		for _, e := range enums[1:] {
			in := map[string]bool{}
			for _, v := range e {
				in[v.dump()] = true
			}
			for k := range common {
				if !in[k] {
					delete(common, k)
				}
			}
		}
		if len(common) > 0 {
			keys := make([]string, 0, len(common))
			for k := range common {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var alts []string
			for _, k := range keys {
				alts = append(alts, c.constant(common[k]))
			}
			return c.addRule(ruleName, "("+strings.Join(alts, " | ")+")"+c.valueEnd())
		}
	}
	return c.addRule(ruleName, c.buildObject(props, required, name, nil))
}
