package toolcall

import (
	"strconv"
	"strings"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/jsontext"
)

// maxPermute is the most required arguments accepted in any order (the
// rules grow as 2^n); past it they come in the schema's order, as
// llama.cpp's COMMON_CHAT_MAX_PERMUTE.
const maxPermute = 6

// xmlGrammar is Qwen3-Coder's grammar as llama.cpp v0.5.0's handler builds
// it: each call a function of the tools, its required arguments in any
// order, then optional ones; a value that may be a string is free text up
// to "\n</parameter>\n" (one of its enum where it has one), any other the
// JSON of its schema. bare lets the
// first call leave out <tool_call> (Qwen3-Coder, which has no reasoning).
func xmlGrammar(b *grammar.Builder, root string, tools []Tool, parallel, bare bool) error {
	argClose := grammar.Literal("\n" + xmlParamClose + "\n")
	text := ""
	var fns []string
	for _, t := range tools {
		params, err := parameters(b, t)
		if err != nil {
			return err
		}
		var req, opt []string
		raw := xmlParams(t.Parameters) // the enums, their $refs not renamed
		for i, x := range xmlParams(params) {
			name := "tool-" + t.Name + "-arg-" + x.Name
			var value string
			if x.Types&tString == 0 {
				value = b.AddSchema(name+"-schema", jsontext.Append(nil, x.Schema)) + " " + argClose
			} else if lits := choiceRule(raw[i]); lits != "" {
				value = "( " + lits + " ) " + argClose
			} else {
				if text == "" {
					text = b.AddRule("xml-arg-string", untilParamClose()+" "+argClose)
				}
				value = text
			}
			r := b.AddRule(name, grammar.Literal(xmlParameter+x.Name+">\n")+" "+value)
			if x.Required {
				req = append(req, r)
			} else {
				opt = append(opt, r)
			}
		}
		args := permute(b, "tool-"+t.Name+"-args", req, false)
		switch {
		case len(opt) > maxPermute: // llama.cpp's: any of them, any number of times
			args += " ( " + strings.Join(opt, " | ") + " )*"
		case len(opt) > 0: // each at most once (llama.cpp's repeats a key)
			args += " " + permute(b, "tool-"+t.Name+"-opts", opt, true) + "?"
		}
		fns = append(fns, b.AddRule("tool-"+t.Name, grammar.Literal(xmlFunction+t.Name+">\n")+" "+args+" "+
			grammar.Literal(xmlFuncClose+"\n")))
	}
	body := "( " + strings.Join(fns, " | ") + " ) " + grammar.Literal(hermesClose) + " space"
	call := b.AddRule("tool-call", grammar.Literal(hermesOpen+"\n")+" "+body)
	first := call
	if bare {
		first = b.AddRule("tool-call-first", grammar.Literal(hermesOpen+"\n")+"? "+body)
	}
	if parallel {
		first += " " + call + "*"
	}
	b.AddRule(root, first)
	return nil
}

// choiceRule is a string parameter's enum as literals of its text ("" for
// any text): llama.cpp leaves every string free, so a model could write a
// value its tool refuses.
func choiceRule(x xmlParam) string {
	var lits []string
	for _, v := range x.Choices {
		if strings.Contains(v, "\n"+xmlParamClose) {
			return ""
		}
		lits = append(lits, grammar.Literal(v))
	}
	return strings.Join(lits, " | ")
}

// untilParamClose is GBNF for text without "\n</parameter>\n": lines
// after the first may be anything but "</parameter>" exactly.
func untilParamClose() string {
	tail := "[^\\n]+"
	for i := len(xmlParamClose) - 1; i >= 0; i-- {
		c := string(xmlParamClose[i])
		tail = "( [^\\n" + c + "] [^\\n]* | " + grammar.Literal(c) + " " + tail + " )?"
	}
	return "[^\\n]* ( \"\\n\" " + tail + " )*"
}

// permute is items in any order (one rule per set of items left), or in
// order past maxPermute; "" for none. some: any of them may be left out
// (the rule then needs at least one; "?" after it takes none).
func permute(b *grammar.Builder, prefix string, items []string, some bool) string {
	if !some && (len(items) <= 1 || len(items) > maxPermute) {
		return strings.Join(items, " ")
	}
	memo := map[int]string{}
	var rest func(left int) string
	rest = func(left int) string {
		if left == 0 {
			return ""
		}
		if r, ok := memo[left]; ok {
			return r
		}
		var alts []string
		for i, it := range items {
			if left&(1<<i) != 0 {
				next := rest(left &^ (1 << i))
				if some && next != "" {
					next += "?"
				}
				alts = append(alts, strings.TrimSpace(it+" "+next))
			}
		}
		memo[left] = b.AddRule(prefix+"-"+strconv.Itoa(left), strings.Join(alts, " | "))
		return memo[left]
	}
	return rest(1<<len(items) - 1)
}
