package toolcall

import (
	"strconv"
	"strings"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/jsontext"
)

// gemma4Grammar is Gemma 4's calls: <|tool_call>call:NAME{...}<tool_call|>
// for each tool, one call or (parallel) more. llama.cpp v0.5.0 holds a
// call's arguments to its generic dict (its handler's TODO: no schema);
// batchd holds them to the tool's schema as far as Gemma's syntax lets a
// grammar say it (gemmaSchemas): an object's properties as keys, each at
// most once, the required ones all there, in any order (the template
// writes them sorted); an array's items and counts; a string's text free
// but for the closing mark (or one of its enum, or a bounded length); a
// number, a boolean or null per its schema's JSON; anything else a Gemma
// value.
func gemma4Grammar(b *grammar.Builder, root string, tools []Tool, parallel bool) error {
	g := &gemmaSchemas{b: b, value: gemmaValueRules(b)}
	g.str = b.AddRule("gemma4-string", grammar.Literal(gemmaQuote)+" gemma4-text-0 "+grammar.Literal(gemmaQuote))
	var fns []string
	for _, t := range tools {
		if _, err := parameters(b, t); err != nil { // checks its $refs; sets its strictness for the scalars
			return err
		}
		v, err := jsontext.Parse(t.Parameters)
		if err != nil {
			return invalid("parameters of %q: %v", t.Name, err)
		}
		g.root, g.budget = v, maxSchemaWalk
		args := g.object("tool-"+t.Name+"-args", v, 0)
		fns = append(fns, b.AddRule("tool-"+t.Name, grammar.Literal(t.Name)+" "+args))
	}
	call := b.AddRule("tool-call", grammar.Literal(gemmaOpen+gemmaCall)+" ( "+strings.Join(fns, " | ")+" ) "+
		grammar.Literal(gemmaClose))
	if parallel {
		call += "+"
	}
	b.AddRule(root, call)
	return nil
}

// gemmaSchemas writes rules for JSON schemas in Gemma's syntax.
type gemmaSchemas struct {
	b          *grammar.Builder
	root       jsontext.Value // the tool's schema, for its local $refs
	value, str string         // any value, any string
	budget     int            // schema nodes left to visit
}

// maxGemmaDepth and maxGemmaCount bound the nesting followed and the
// counts (lengths, items) spelt out; past them a value is any value, a
// count unbounded.
const (
	maxGemmaDepth = 8
	maxGemmaCount = 256
)

// rule is the expression for a value of schema v.
func (g *gemmaSchemas) rule(name string, v jsontext.Value, depth int) string {
	if g.budget--; g.budget < 0 || depth > maxGemmaDepth || v.Kind != jsontext.Object {
		return g.value
	}
	if r, ok := v.Get("$ref"); ok {
		if t, ok := localRef(g.root, r.Text); ok && r.Kind == jsontext.String {
			return g.rule(name, t, depth+1)
		}
		return g.value
	}
	if c, ok := v.Get("const"); ok {
		return g.literal(c)
	}
	if e, ok := v.Get("enum"); ok && e.Kind == jsontext.Array && len(e.Items) > 0 {
		var alts []string
		for _, x := range e.Items {
			alts = append(alts, g.literal(x))
		}
		return "( " + strings.Join(alts, " | ") + " )"
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if a, ok := v.Get(k); ok && a.Kind == jsontext.Array && len(a.Items) > 0 {
			var alts []string
			for i, x := range a.Items {
				alts = append(alts, g.rule(name+"-"+strconv.Itoa(i), x, depth+1))
			}
			return g.b.AddRule(name, strings.Join(alts, " | "))
		}
	}
	if _, ok := v.Get("allOf"); ok {
		return g.value
	}
	budget := maxSchemaWalk
	types := schemaTypes(v, g.root, &budget)
	nullable := types&tNull != 0 && types != tNull
	var r string
	switch types &^ tNull {
	case tObject:
		r = g.object(name, v, depth)
	case tArray:
		r = g.array(name, v, depth)
	case tString:
		r = g.text(v)
	case tInteger, tInteger | tNumber, tBool:
		r = g.b.AddSchema(name, jsontext.Append(nil, v))
		nullable = false // its JSON says null where it allows it
	case 0:
		return g.b.AddSchema(name, jsontext.Append(nil, v)) // null only
	default:
		return g.value
	}
	if nullable {
		r = "( " + r + ` | "null" )`
	}
	return r
}

// literal is an enum's or const's value in Gemma's syntax.
func (g *gemmaSchemas) literal(x jsontext.Value) string {
	switch x.Kind {
	case jsontext.String:
		if strings.Contains(x.Text, gemmaQuote) {
			return g.str
		}
		return grammar.Literal(gemmaQuote + x.Text + gemmaQuote)
	case jsontext.Object, jsontext.Array:
		return g.value
	}
	return grammar.Literal(string(jsontext.Append(nil, x)))
}

// object is {key:value,...}: its properties in any order, each at most
// once, the required ones all there; without properties, any dict.
func (g *gemmaSchemas) object(name string, v jsontext.Value, depth int) string {
	props, ok := v.Get("properties")
	if !ok || props.Kind != jsontext.Object {
		return "gemma4-dict"
	}
	req := map[string]bool{}
	if r, ok := v.Get("required"); ok && r.Kind == jsontext.Array {
		for _, x := range r.Items {
			req[x.Text] = true
		}
	}
	var items []string
	var required []bool
	for _, m := range props.Members {
		if strings.ContainsAny(m.Key, ":}") || m.Key == "" { // no bare key can say it
			return "gemma4-dict"
		}
		val := g.rule(name+"-"+m.Key, m.Value, depth+1)
		items = append(items, g.b.AddRule(name+"-"+m.Key+"-kv", grammar.Literal(m.Key+":")+" space "+val))
		required = append(required, req[m.Key])
	}
	args := anyOrder(g.b, name, items, required)
	if args == "" {
		return `"{" space "}"`
	}
	return `"{" space ` + args + ` space "}"`
}

// array is [value,...] with its items' schema and its counts.
func (g *gemmaSchemas) array(name string, v jsontext.Value, depth int) string {
	item := g.value
	if it, ok := v.Get("items"); ok {
		item = g.rule(name+"-item", it, depth+1)
	}
	lo, hi := counts(v, "minItems", "maxItems")
	more := ` ( "," space ` + item + " )"
	switch {
	case hi == 0:
		return `"[" space "]"`
	case hi < 0:
		more += "{" + strconv.Itoa(max(lo-1, 0)) + ",}"
	default:
		more += "{" + strconv.Itoa(max(lo-1, 0)) + "," + strconv.Itoa(hi-1) + "}"
	}
	body := item + more
	if lo == 0 {
		body = "( " + body + " )?"
	}
	return g.b.AddRule(name, `"[" space `+body+` space "]"`)
}

// text is a string: free but for the closing mark, or of bounded length
// (then without '<', so that no mark can begin in it).
func (g *gemmaSchemas) text(v jsontext.Value) string {
	lo, hi := counts(v, "minLength", "maxLength")
	if lo == 0 && hi < 0 {
		return g.str
	}
	n := "{" + strconv.Itoa(lo) + ","
	if hi >= 0 {
		n += strconv.Itoa(hi)
	}
	return grammar.Literal(gemmaQuote) + " [^<]" + n + "} " + grammar.Literal(gemmaQuote)
}

// counts are a schema's lower and upper bounds (hi -1: none), bounds past
// maxGemmaCount dropped.
func counts(v jsontext.Value, minKey, maxKey string) (lo, hi int) {
	hi = -1
	if x, ok := v.Get(minKey); ok && x.Kind == jsontext.Number {
		if n, err := strconv.Atoi(x.Text); err == nil && n > 0 && n <= maxGemmaCount {
			lo = n
		}
	}
	if x, ok := v.Get(maxKey); ok && x.Kind == jsontext.Number {
		if n, err := strconv.Atoi(x.Text); err == nil && n >= lo && n <= maxGemmaCount {
			hi = n
		}
	}
	return lo, hi
}

// gemmaValueRules adds Gemma's untyped value (llama.cpp's gemma4-value)
// and the text of a string: any text without the closing mark <|"|>, as
// the states of matching that mark (a right-recursive automaton: '<' only
// opens the mark, so each state knows the whole match so far).
func gemmaValueRules(b *grammar.Builder) string {
	// gemma4-text-k: k bytes of <|"|> matched (k 1 to 4); the text may end
	// in any state, as the closing mark then follows.
	next := []string{`"|"`, `"\""`, `"|"`}
	not := []string{`[^<|]`, `[^<"]`, `[^<|]`, `[^<>]`}
	b.AddRule("gemma4-text-0", `[^<] gemma4-text-0 | "<" gemma4-text-1 | ""`)
	for k := 1; k <= 4; k++ {
		alts := `"<" gemma4-text-1 | ` + not[k-1] + ` gemma4-text-0 | ""`
		if k < 4 {
			alts += " | " + next[k-1] + " gemma4-text-" + strconv.Itoa(k+1)
		}
		b.AddRule("gemma4-text-"+strconv.Itoa(k), alts)
	}
	num := b.AddSchema("gemma4-number", []byte(`{"type": "number"}`))
	b.AddRule("gemma4-kv", `[^:}]+ ":" space gemma4-value`)
	b.AddRule("gemma4-dict", `"{" space ( "}" | gemma4-kv ( "," space gemma4-kv )* space "}" )`)
	b.AddRule("gemma4-array", `"[" space ( "]" | gemma4-value ( "," space gemma4-value )* space "]" )`)
	return b.AddRule("gemma4-value", grammar.Literal(gemmaQuote)+` gemma4-text-0 `+grammar.Literal(gemmaQuote)+
		` | gemma4-dict | gemma4-array | `+num+` | "true" | "false" | "null"`)
}

// anyOrder is items joined by ",", each at most once, in any order, the
// required ones all present; "" for no items. Past maxPermute items the
// required come first in order, then any optional ones (llama.cpp's way,
// which may repeat one).
func anyOrder(b *grammar.Builder, prefix string, items []string, required []bool) string {
	if len(items) == 0 {
		return ""
	}
	var need int
	for i, r := range required {
		if r {
			need |= 1 << i
		}
	}
	if len(items) > maxPermute {
		var req, opt []string
		for i, it := range items {
			if required[i] {
				req = append(req, it)
			} else {
				opt = append(opt, it)
			}
		}
		out := strings.Join(req, ` "," space `)
		if len(opt) > 0 {
			alts := "( " + strings.Join(opt, " | ") + " )"
			if out == "" {
				return "( " + alts + ` ( "," space ` + alts + " )* )?"
			}
			out += ` ( "," space ` + alts + " )*"
		}
		return out
	}
	memo := map[int]string{}
	var rest func(left int) string
	rest = func(left int) string {
		if r, ok := memo[left]; ok {
			return r
		}
		var alts []string
		for i, it := range items {
			if left&(1<<i) == 0 {
				continue
			}
			after := left &^ (1 << i)
			switch {
			case after == 0:
				alts = append(alts, it)
			case after&need == 0: // nothing required left: the rest may stop here
				alts = append(alts, it+` ( "," space `+rest(after)+" )?")
			default:
				alts = append(alts, it+` "," space `+rest(after))
			}
		}
		memo[left] = b.AddRule(prefix+"-"+strconv.Itoa(left), strings.Join(alts, " | "))
		return memo[left]
	}
	all := rest(1<<len(items) - 1)
	if need == 0 {
		return all + "?"
	}
	return all
}
