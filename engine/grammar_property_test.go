package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/grammar"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/sample"
	"github.com/batchd/batchd/testing/jsonvalid"
	"github.com/batchd/batchd/testing/testmodels"
)

// schemaGen writes random JSON Schemas with every keyword the converter
// enforces, nested; strings are bounded so that most outputs end before
// max_tokens.
type schemaGen struct {
	r    *rand.Rand
	defs map[string]any
}

func (g *schemaGen) schema(depth int) map[string]any {
	kinds := []string{"string", "integer", "number", "boolean", "null", "enum", "const", "pattern", "format", "union", "nullable"}
	if depth < 3 {
		kinds = append(kinds, "object", "object", "array", "tuple", "anyOf", "oneOf", "allOf", "ref")
	}
	switch k := kinds[g.r.IntN(len(kinds))]; k {
	case "string":
		s := map[string]any{"type": "string", "maxLength": g.r.IntN(8)}
		if g.r.IntN(2) == 0 {
			s["minLength"] = g.r.IntN(3)
			s["maxLength"] = s["minLength"].(int) + g.r.IntN(6)
		}
		return s
	case "integer":
		s := map[string]any{"type": "integer"}
		lo := g.r.IntN(200) - 100
		switch g.r.IntN(4) {
		case 0:
			s["minimum"], s["maximum"] = lo, lo+g.r.IntN(300)
		case 1:
			s["minimum"] = lo
		case 2:
			s["exclusiveMaximum"] = lo
		}
		return s
	case "number", "boolean", "null":
		return map[string]any{"type": k}
	case "enum":
		return map[string]any{"enum": []any{"red", "green", 7, nil, true, "é ü"}[:1+g.r.IntN(5)]}
	case "const":
		return map[string]any{"const": []any{"x", 42, false, map[string]any{"a": 1}}[g.r.IntN(4)]}
	case "pattern":
		return map[string]any{"type": "string", "pattern": []string{`^[A-Z]{2}-[0-9]{1,3}$`, `^(ab|cd)+x?$`, `^\d{3}\.\w{2}$`, `^a.b$`}[g.r.IntN(4)]}
	case "format":
		return map[string]any{"type": "string", "format": []string{"date", "time", "date-time", "uuid"}[g.r.IntN(4)]}
	case "union":
		return map[string]any{"type": []any{"integer", "boolean", "null"}}
	case "nullable":
		return map[string]any{"type": []any{"string", "null"}, "maxLength": 4}
	case "object":
		props := map[string]any{}
		req := []any{}
		for i := range 1 + g.r.IntN(3) {
			name := fmt.Sprintf("k%d", i)
			props[name] = g.schema(depth + 1)
			if g.r.IntN(2) == 0 {
				req = append(req, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "required": req}
		if g.r.IntN(3) == 0 {
			s["additionalProperties"] = false
		}
		return s
	case "array":
		lo := g.r.IntN(2)
		return map[string]any{"type": "array", "items": g.schema(depth + 1), "minItems": lo, "maxItems": lo + g.r.IntN(3)}
	case "tuple":
		return map[string]any{"type": "array", "prefixItems": []any{g.schema(depth + 1), g.schema(depth + 1)}}
	case "anyOf":
		return map[string]any{"anyOf": []any{g.schema(depth + 1), g.schema(depth + 1)}}
	case "oneOf": // disjoint alternatives, which batchd accepts
		return map[string]any{"oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string", "maxLength": 3},
			map[string]any{"type": "object", "properties": map[string]any{"z": map[string]any{"type": "boolean"}}, "required": []any{"z"}}}}
	case "allOf":
		return map[string]any{"allOf": []any{
			map[string]any{"properties": map[string]any{"a": map[string]any{"type": "integer", "minimum": 0, "maximum": 9}}},
			map[string]any{"properties": map[string]any{"b": map[string]any{"type": "boolean"}}}}}
	default: // ref
		name := fmt.Sprintf("d%d", len(g.defs))
		g.defs[name] = g.schema(depth + 1)
		return map[string]any{"$ref": "#/$defs/" + name}
	}
}

// TestRandomSchemasGiveValidOutput: random schemas (9 per model here; more
// with a longer loop) x the arch models x
// temperatures 0, 0.7 and 1.5 x seeds: every output parses and validates
// against its schema (an independent validator, formats asserted) unless
// it stopped on max_tokens.
func TestRandomSchemasGiveValidOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("many generations")
	}
	models := []string{"qwen2", "llama3", "mistral"}
	valid, cut := 0, 0
	for mi, arch := range models {
		m, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", "tiny-"+arch+".gguf"), model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e := startEngine(t, m, engineOpts{})
		prompt := m.Tokenizer.Encode("Reply with JSON:", true)
		for i := range 9 {
			g := &schemaGen{r: rand.New(rand.NewPCG(uint64(mi), uint64(i))), defs: map[string]any{}}
			s := g.schema(0)
			if len(g.defs) > 0 {
				s["$defs"] = g.defs
			}
			schema, _ := json.Marshal(s)
			gr, err := grammar.FromSchema(context.Background(), schema, grammar.SchemaOptions{Strict: true})
			if err != nil {
				t.Fatalf("%s: %v", schema, err)
			}
			for ti, temp := range []float32{0, 0.7, 1.5} {
				st, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: 160, Grammar: gr,
					Sampling: sample.Params{Temperature: temp, Seed: uint64(100*i + ti)}})
				if err != nil {
					t.Fatal(err)
				}
				text, _, done, err := st.Wait(context.Background())
				switch {
				case err != nil:
					t.Fatal(err)
				case done.Finish == FinishLength:
					cut++
					continue
				case done.Finish != FinishStop:
					t.Fatalf("%s at %v: finished %s (%v)", schema, temp, done.Finish, done.Err)
				}
				if err := jsonvalid.Validate(schema, []byte(strings.TrimSpace(text))); err != nil {
					t.Errorf("%s, %s at temperature %v: %q: %v", arch, schema, temp, text, err)
				}
				valid++
			}
		}
		m.Close()
	}
	t.Logf("%d outputs validated, %d cut by max_tokens", valid, cut)
	if valid < 3*cut {
		t.Errorf("only %d of %d outputs ended before max_tokens", valid, valid+cut)
	}
}
