package grammar

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// objectSchema is an object of n optional (or required) string properties.
func objectSchema(n int, required bool) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}`)
	if required {
		b.WriteString(`,"required":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d"`, i)
		}
		b.WriteString(`]`)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// TestConversionWorkIsLinear: the converter's work (the bytes of rules it
// writes, rebuilt ones again) grows linearly with the schema's size for
// the shapes that were quadratic (optional properties rebuilt their chain
// per suffix: 4,000 of them took 26 s) and the others; it is a count, not
// a time, so the test cannot be flaky.
func TestConversionWorkIsLinear(t *testing.T) {
	shapes := map[string]func(n int) []byte{
		"optional properties": func(n int) []byte { return objectSchema(n, false) },
		"required properties": func(n int) []byte { return objectSchema(n, true) },
		"enum": func(n int) []byte {
			vals := make([]string, n)
			for i := range vals {
				vals[i] = fmt.Sprintf(`"v%d"`, i)
			}
			return []byte(`{"enum":[` + strings.Join(vals, ",") + `]}`)
		},
		"anyOf": func(n int) []byte {
			alts := make([]string, n)
			for i := range alts {
				alts[i] = fmt.Sprintf(`{"type":"object","properties":{"k%d":{"type":"integer"}},"required":["k%d"]}`, i, i)
			}
			return []byte(`{"anyOf":[` + strings.Join(alts, ",") + `]}`)
		},
		"$defs chain": func(n int) []byte {
			defs := make([]string, n)
			for i := range defs {
				next := `{"type":"string"}`
				if i+1 < n {
					next = fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i+1)
				}
				defs[i] = fmt.Sprintf(`"d%d":{"type":"object","properties":{"x":%s}}`, i, next)
			}
			return []byte(`{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/d0"}`)
		},
	}
	for name, gen := range shapes {
		work := func(n int) (int, int) {
			schema := gen(n)
			v, err := parseValue(schema)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c := newConverter(context.Background(), true)
			c.root = v
			if err := c.resolveRefs(v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c.visit(v, "")
			if c.err != nil {
				t.Fatalf("%s at %d: %v", name, n, c.err)
			}
			return c.work, len(schema)
		}
		w1, s1 := work(200)
		w2, s2 := work(1600)
		if float64(w2)/float64(w1) > 1.5*float64(s2)/float64(s1) {
			t.Errorf("%s: %d bytes of work for %d bytes of schema, %d for %d: not linear", name, w1, s1, w2, s2)
		}
	}
}

// TestConversionIsBoundedAndCancellable: a schema past the work bound
// fails with ErrTooComplex, and an ended context stops the conversion.
func TestConversionIsBoundedAndCancellable(t *testing.T) {
	big := objectSchema(40000, false) // ~1 MB of schema, several MB of rules
	if _, err := SchemaGBNF(context.Background(), big, SchemaOptions{}); !errors.Is(err, ErrTooComplex) {
		t.Errorf("a schema past the work bound: %v, want ErrTooComplex", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SchemaGBNF(ctx, objectSchema(3000, false), SchemaOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("with its context ended: %v, want context.Canceled", err)
	}
}

// TestCacheIsKeyedOnTheSpec: a spec compiled once is found again without
// converting it (so a request whose context has already ended still gets
// it), a failing spec fails again from the cache, and a compilation cut
// short by its context is not kept.
func TestCacheIsKeyedOnTheSpec(t *testing.T) {
	c := NewCache(4)
	spec := Spec{Schema: objectSchema(50, true), Strict: true}
	g, err := c.Get(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if g2, err := c.Get(done, spec); err != nil || g2 != g {
		t.Fatalf("a cached spec: %p %v, want %p", g2, err, g)
	}
	if _, err := c.Get(done, Spec{Schema: objectSchema(51, true), Strict: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a new spec with an ended context: %v", err)
	}
	if _, err := c.Get(context.Background(), Spec{Schema: objectSchema(51, true), Strict: true}); err != nil {
		t.Fatalf("after a cancelled compilation: %v", err)
	}
	bad := Spec{Schema: []byte(`{"type":"string","uniqueItems":true,"x-nope":1,"minProperties":1}`), Strict: true}
	_, err1 := c.Get(context.Background(), bad)
	_, err2 := c.Get(done, bad)
	if err1 == nil || err2 != err1 {
		t.Fatalf("a failing spec: %v then %v, want the same error from the cache", err1, err2)
	}
	// Strict is part of the key.
	if _, err := c.Get(context.Background(), Spec{Schema: bad.Schema}); err != nil && errors.Is(err, err1) {
		t.Fatal("strict and non-strict share an entry")
	}
}
