package grammar

import (
	"errors"
	"strings"
	"testing"
)

// accepts feeds s to a fresh matcher in pieces of n bytes.
func accepts(g *Grammar, s string, n int) (ok, complete bool) {
	m := g.NewMatcher()
	for i := 0; i < len(s); i += n {
		if m.Accept([]byte(s[i:min(i+n, len(s))])) != nil {
			return false, false
		}
	}
	return true, m.AllowsEnd()
}

func TestGrammarLanguages(t *testing.T) {
	for _, tc := range []struct {
		src      string
		in, out  []string // sentences, and texts that are not even prefixes of one
		prefixes []string // prefixes of sentences that are not sentences
	}{
		{`root ::= "yes" | "no"`, []string{"yes", "no"}, []string{"y e", "nope", "x"}, []string{"ye", "n"}},
		{"root ::= [a-c]+ [0-9]{2,3}", []string{"a12", "abc123", "cc99"}, []string{"1", "a1234", "d1"}, []string{"a", "ab1"}},
		{`root ::= ("ab" | "c")* "."`, []string{".", "ab.", "cabc."}, []string{"a.", "b"}, []string{"", "ab", "a"}},
		{`root ::= [^"\\]* "\""`, []string{`"`, `abc"`, `é日本"`}, []string{`\`}, []string{"abc"}},
		{"root ::= x y\nx ::= \"a\"?\ny ::= \"b\"{0,2} # a comment\n", []string{"", "a", "ab", "abb", "bb"}, []string{"abbb", "ba"}, nil},
		{"root ::= . \"\\n\" | \"\\x41\\u00e9\\U0001F600\"", []string{"z\n", "日\n", "Aé😀"}, []string{"zz"}, []string{"A", "Aé"}},
		{"root ::= ( \"[\"\n  root \"]\" )?\n", []string{"", "[]", "[[]]"}, []string{"]", "[]]"}, []string{"[", "[["}},
	} {
		g, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		for n := 1; n <= 3; n++ { // tokens of 1, 2 and 3 bytes: characters split across them too
			for _, s := range tc.in {
				if ok, complete := accepts(g, s, n); !ok || !complete {
					t.Errorf("%q: %q (pieces of %d): accepted %v, complete %v; want a sentence", tc.src, s, n, ok, complete)
				}
			}
			for _, s := range tc.out {
				if ok, _ := accepts(g, s, n); ok {
					t.Errorf("%q: %q (pieces of %d) accepted", tc.src, s, n)
				}
			}
			for _, s := range tc.prefixes {
				if ok, complete := accepts(g, s, n); !ok || complete {
					t.Errorf("%q: %q (pieces of %d): accepted %v, complete %v; want a prefix only", tc.src, s, n, ok, complete)
				}
			}
		}
	}
}

func TestGrammarErrors(t *testing.T) {
	for src, want := range map[string]string{
		"root ::= a":                         `line 1, column 10: undefined rule "a"`,
		"root ::= \"a\"\nx ::= \"b\" | (c":   "line 2, column 13: unmatched (",
		"root ::= [a-":                       "line 1, column 10: unexpected end of input in a character class",
		"root ::= \"a\\q\"":                  `line 1, column 12: unknown escape \q`,
		"root ::= \"a\"{3,1}":                "line 1, column 13: repetition {3,1}",
		"root ::= * \"a\"":                   "line 1, column 10: expecting an item",
		"x ::= \"a\"":                        "no root rule",
		"root = \"a\"":                       "line 1, column 6: expecting ::=",
		"root ::= a \"x\"\na ::= b\nb ::= a": `left-recursive`,
		"root ::= root \"x\" | \"y\"":        `rule "root" is left-recursive`,
		"root ::= e root\ne ::= \"a\"?":      `left-recursive`,
		"root ::= \"a\"\nroot ::= \"b\"":     `line 2, column 1: rule "root" defined twice`,
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	for _, src := range []string{"root ::= \"a\"{0,2000000}", "root ::= \"abcdefghij\"{200000}", strings.Repeat("(", 200) + "\"a\"" + strings.Repeat(")", 200)} {
		if _, err := Parse("root ::= " + strings.TrimPrefix(src, "root ::= ")); !errors.Is(err, ErrTooComplex) {
			t.Errorf("%.40q: %v, want ErrTooComplex", src, err)
		}
	}
}

// TestVocabMask: the trie walk allows exactly the tokens that Allows
// allows, one by one, including tokens that end inside a character.
func TestVocabMask(t *testing.T) {
	g, err := Parse(`root ::= "{" [a-z]* "é" "}"`)
	if err != nil {
		t.Fatal(err)
	}
	toks := [][]byte{[]byte("{"), []byte("{a"), []byte("ab"), []byte("a"), []byte("é"), []byte("\xc3"), []byte("\xa9}"),
		[]byte("}"), nil, []byte("{ab\xc3"), []byte("a\xc3\xa9}"), []byte("Z"), []byte("{{")}
	v := NewVocab(toks)
	m := g.NewMatcher()
	for _, text := range []string{"", "{", "{ab", "{ab\xc3", "{abé"} {
		m = g.NewMatcher()
		if text != "" {
			if err := m.Accept([]byte(text)); err != nil {
				t.Fatalf("%q: %v", text, err)
			}
		}
		mask, err := v.Allowed(m)
		if err != nil {
			t.Fatal(err)
		}
		for id, tok := range toks {
			if mask.Has(id) != m.Allows(tok) {
				t.Errorf("after %q: token %q: mask %v, Allows %v", text, tok, mask.Has(id), m.Allows(tok))
			}
		}
		n := 0
		for id := range toks {
			if mask.Has(id) {
				if n >= len(mask.IDs) || mask.IDs[n] != int32(id) {
					t.Errorf("after %q: the list %v lacks %d", text, mask.IDs, id)
				}
				n++
			}
		}
	}
}

// TestTooComplexStateIsAnErrorNotAnEmptyMask: a token that would reach a
// state past the stack bound makes the mask an error; leaving that token
// out (as the walk did) emptied the mask and left the sampler nothing.
func TestTooComplexStateIsAnErrorNotAnEmptyMask(t *testing.T) {
	g, err := Parse(`root ::= "x" (("a"{0,8}){0,8}){0,8}`)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVocab([][]byte{[]byte("x"), []byte("a"), []byte("xa"), []byte("b")})
	mask, err := v.Allowed(g.NewMatcher())
	if !errors.Is(err, ErrTooComplex) {
		t.Fatalf("mask %v, err %v; want ErrTooComplex", mask, err)
	}
	// A grammar within the bounds still gets its mask.
	g2, err := Parse(`root ::= "x" "a"*`)
	if err != nil {
		t.Fatal(err)
	}
	mask, err = v.Allowed(g2.NewMatcher())
	if err != nil || !mask.Has(0) || !mask.Has(2) || mask.Has(1) || mask.Has(3) {
		t.Fatalf("mask %v, err %v; want x and xa", mask, err)
	}
}
