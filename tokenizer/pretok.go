package tokenizer

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dlclark/regexp2/v2"
)

// A pre-tokenizer splits text into words before BPE merges, as the
// tokenizer.ggml.pre name says. Each name maps to llama.cpp's list of
// patterns (src/llama-vocab.cpp): every pattern splits the fragments the
// previous one left, its matches and the text between them each becoming a
// fragment. Two patterns have hand-written splitters (pretok_custom.go); the
// rest run in regexp2, a backtracking engine with the lookahead these
// patterns need (Go's regexp has none). Patterns with Unicode classes run on
// collapsed text, one stand-in codepoint per class, as llama.cpp's do, so
// both engines see the same classes.
type preTokenizer struct {
	name  string
	steps []splitStep
}

type splitStep struct {
	custom func(fragment, []int) []int
	re     *regexp2.Regexp
	// collapsed: the pattern had \p{..} classes and runs on collapse(text).
	collapsed bool
}

var (
	starcoderPatterns = []string{`\p{N}`, gpt2Pattern}
	qwen2Pattern      = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// deepseekLetters is the letter class of DeepSeek LLM's tokenizer.json.
	// Non-ASCII characters are escapes: several of these (U+1F7D, U+1FBE,
	// U+1FD3, U+1FDB, U+2126, U+212A) change under Unicode normalization,
	// which an editor or a copy may apply without a trace.
	deepseekLetters = "\\s?[" +
		"A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF" +
		"\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5" +
		"\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA" +
		"\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45" +
		"\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE" +
		"\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC" +
		"\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139" +
		"\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3" +
		"\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06" +
		"\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3" +
		"\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF" +
		"\U0001E900-\U0001E943" +
		"]+"
	// cjkRuns is DeepSeek's run of CJK ideographs and Hangul.
	cjkRuns = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+"
)

// preTokenizerPatterns names llama.cpp's pre-tokenizer types and their
// patterns; aliases share an entry.
var preTokenizerPatterns = map[string][]string{
	"default":   {`[\p{P}\$\+<=>\^~\|]+`, gpt2Pattern, `\p{N}+`, `[0-9][0-9][0-9]`},
	"llama-bpe": {llama3Pattern},
	"gpt-2":     {gpt2Pattern},
	"starcoder": starcoderPatterns,
	"qwen2":     {qwen2Pattern},
	"falcon":    {`[\p{P}\$\+<=>\^~\|` + "`" + `]+`, gpt2Pattern, `[0-9][0-9][0-9]`},
	"deepseek-llm": {"[\r\n]", deepseekLetters, "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+",
		`\s+$`, cjkRuns, `\p{N}+`},
	"deepseek-coder": {"[\r\n]", `\s?\p{L}+`, `\s?\p{P}+`, cjkRuns, `\p{N}`},
}

// preTokenizerAliases maps every accepted tokenizer.ggml.pre name to its
// entry, as llama.cpp groups them.
var preTokenizerAliases = map[string]string{
	"default": "default", "llama-bpe": "llama-bpe", "llama3": "llama-bpe", "llama-v3": "llama-bpe",
	"falcon3": "llama-bpe", "dbrx": "llama-bpe", "smaug-bpe": "llama-bpe",
	"gpt-2": "gpt-2", "mpt": "gpt-2", "olmo": "gpt-2", "jais": "gpt-2", "phi-2": "gpt-2",
	"roberta-bpe": "gpt-2", "gpt-neox": "gpt-2",
	"starcoder": "starcoder", "refact": "starcoder", "command-r": "starcoder", "smollm": "starcoder",
	"codeshell": "starcoder", "exaone": "starcoder", "minerva-7b": "starcoder",
	"qwen2": "qwen2", "qwen2.5": "qwen2", "stablelm2": "qwen2", "megrez": "qwen2", "deepseek-r1-qwen": "qwen2",
	"falcon":       "falcon",
	"deepseek-llm": "deepseek-llm", "deepseek-coder": "deepseek-coder",
}

// PreTokenizers lists the tokenizer.ggml.pre names batchd supports.
func PreTokenizers() []string {
	names := make([]string, 0, len(preTokenizerAliases))
	for n := range preTokenizerAliases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func newPreTokenizer(name string) (*preTokenizer, error) {
	if name == "" {
		name = "default" // llama.cpp warns and uses the default patterns
	}
	entry, ok := preTokenizerAliases[name]
	if !ok {
		return nil, fmt.Errorf("%w: pre-tokenizer %q (batchd supports %s)", ErrUnsupported, name, strings.Join(PreTokenizers(), ", "))
	}
	p := &preTokenizer{name: entry}
	for _, pat := range preTokenizerPatterns[entry] {
		st, err := compileStep(pat)
		if err != nil {
			return nil, fmt.Errorf("pre-tokenizer %s: %w", name, err)
		}
		p.steps = append(p.steps, st)
	}
	return p, nil
}

func compileStep(pat string) (splitStep, error) {
	switch pat {
	case gpt2Pattern:
		return splitStep{custom: splitGPT2}, nil
	case llama3Pattern:
		return splitStep{custom: splitLlama3}, nil
	}
	expr, collapsed := collapsePattern(pat)
	re, err := regexp2.Compile(expr)
	if err != nil {
		return splitStep{}, err
	}
	return splitStep{re: re, collapsed: collapsed}, nil
}

// ucat gives each class llama.cpp collapses: its stand-in codepoint and
// the ASCII members that stay themselves in collapsed text.
var ucat = map[string]string{
	`\p{N}`: `\u00D10-9`,
	`\p{L}`: `\u00D2A-Za-z`,
	`\p{P}`: `\u00D3!-#%-*,-/:-;?-@\[-\]_\{\}`,
	`\p{M}`: `\u00D4`,
	`\p{S}`: `\u00D5\$\+<-\>\^` + "`" + `\|`,
}

// collapsePattern rewrites \p{X} classes into their collapsed form, inside
// a bracket expression or as one of their own; it reports whether any was
// found (the text must then be collapsed too).
func collapsePattern(pat string) (string, bool) {
	if !strings.Contains(pat, `\p{`) {
		return pat, false
	}
	var b strings.Builder
	inside := false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '[' && (i == 0 || pat[i-1] != '\\'):
			inside = true
		case c == ']' && inside && pat[i-1] != '\\':
			inside = false
		case c == '\\' && i+5 <= len(pat) && ucat[pat[i:i+5]] != "":
			if inside {
				b.WriteString(ucat[pat[i:i+5]])
			} else {
				b.WriteString("[" + ucat[pat[i:i+5]] + "]")
			}
			i += 4
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// split returns the words of text (codepoints cps) as lengths in
// codepoints, in order.
func (p *preTokenizer) split(ctx context.Context, cps []rune) ([]int, error) {
	lens := []int{len(cps)}
	if len(cps) == 0 {
		return nil, nil
	}
	var collapsed, spaced []rune
	for _, st := range p.steps {
		input := cps
		if st.re != nil {
			if st.collapsed {
				if collapsed == nil {
					collapsed = collapse(cps)
				}
				input = collapsed
			} else {
				if spaced == nil {
					spaced = spacesToVT(cps)
				}
				input = spaced
			}
		}
		out := make([]int, 0, len(lens)*2)
		start := 0
		for i, n := range lens {
			if i&255 == 255 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var err error
			if out, err = st.apply(input[start:start+n], out); err != nil {
				return nil, err
			}
			start += n
		}
		lens = out
	}
	return lens, nil
}

// apply splits one fragment: matches and the gaps between them.
func (st splitStep) apply(f []rune, out []int) ([]int, error) {
	if st.custom != nil {
		return st.custom(f, out), nil
	}
	last := 0
	err := st.re.FindRunesMatches(f, 0, func(m regexp2.MatchView) bool {
		at, n, _ := m.GroupRange(0)
		if n == 0 {
			return true
		}
		if at > last {
			out = append(out, at-last)
		}
		out = append(out, n)
		last = at + n
		return true
	})
	if last < len(f) {
		out = append(out, len(f)-last)
	}
	return out, err
}
