package grammar

import (
	"fmt"
	"slices"
	"strings"
)

// Keywords the converter enforces, and annotations that do not change
// what valid output is.
var (
	enforced = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
		"items": true, "prefixItems": true, "minItems": true, "maxItems": true, "enum": true, "const": true,
		"anyOf": true, "oneOf": true, "allOf": true, "$ref": true, "$defs": true, "definitions": true,
		"pattern": true, "format": true, "minLength": true, "maxLength": true,
		"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true}
	annotations = map[string]bool{"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
		"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$anchor": true}
	formats = map[string]bool{"date": true, "time": true, "date-time": true, "uuid": true, "uuid1": true,
		"uuid2": true, "uuid3": true, "uuid4": true, "uuid5": true}
)

// checkSchema finds what a grammar would not enforce: an unknown keyword,
// number bounds, an unknown format, keywords beside $ref. With strict it
// is an error naming the keyword; without, such keywords are ignored.
// Mistakes (a required that is not a list, minItems above maxItems) are
// errors either way.
func checkSchema(v value, path string, strict bool) error {
	if v.kind == vBool {
		return nil
	}
	if v.kind != vObject {
		return &SchemaError{Path: path, Msg: "a schema must be an object or a boolean"}
	}
	unsupported := func(k, why string) error {
		if !strict {
			return nil
		}
		return &SchemaError{Path: path, Keyword: k, Msg: why + " (send strict: false to ignore it)"}
	}
	typ, _ := v.get("type")
	isNumber := typ.kind == vString && (typ.str == "number" || typ.str == "integer")
	for _, m := range v.obj {
		k := m.key
		switch {
		case annotations[k]:
		case !enforced[k]:
			if err := unsupported(k, "batchd cannot enforce this keyword"); err != nil {
				return err
			}
		case v.has("$ref") && k != "$ref" && k != "$defs" && k != "definitions":
			if err := unsupported(k, "keywords beside $ref are not applied"); err != nil {
				return err
			}
		case !isNumber && (strings.Contains(k, "imum") || k == "multipleOf"):
			if err := unsupported(k, `enforced on a schema of "type": "number" or "integer"`); err != nil {
				return err
			}
		case k == "format" && m.val.kind == vString && !formats[m.val.str]:
			if err := unsupported(k, fmt.Sprintf("format %q is not enforced (date, time, date-time and uuid are)", m.val.str)); err != nil {
				return err
			}
		}
	}
	if err := checkShapes(v, path); err != nil {
		return err
	}
	return checkChildren(v, path, strict)
}

// checkShapes refuses keywords of the wrong JSON type and bounds that
// cross.
func checkShapes(v value, path string) error {
	for k, want := range map[string]valueKind{"required": vArray, "enum": vArray, "anyOf": vArray, "oneOf": vArray,
		"allOf": vArray, "properties": vObject, "$defs": vObject, "definitions": vObject, "pattern": vString,
		"$ref": vString, "minItems": vNumber, "maxItems": vNumber, "minLength": vNumber, "maxLength": vNumber} {
		if x, ok := v.get(k); ok && x.kind != want {
			return &SchemaError{Path: path, Keyword: k, Msg: "has the wrong JSON type"}
		}
	}
	for _, pair := range [][2]string{{"minItems", "maxItems"}, {"minLength", "maxLength"}, {"minimum", "maximum"}} {
		lo, okLo := v.int(pair[0])
		hi, okHi := v.int(pair[1])
		if okLo && okHi && lo > hi {
			return &SchemaError{Path: path, Keyword: pair[0], Msg: fmt.Sprintf("%d is above %s %d: nothing fits", lo, pair[1], hi)}
		}
		for i, ok := range []bool{okLo, okHi} {
			if x, has := v.get(pair[i]); has && !ok && !strings.Contains(pair[i], "imum") {
				return &SchemaError{Path: path, Keyword: pair[i], Msg: fmt.Sprintf("%s: want a whole number", x.dump())}
			}
		}
	}
	for _, k := range []string{"minItems", "maxItems", "minLength", "maxLength"} {
		if n, ok := v.int(k); ok && (n < 0 || n > 1<<16) {
			return &SchemaError{Path: path, Keyword: k, Msg: fmt.Sprintf("%d: want 0 to %d", n, 1<<16)}
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "enum", "allOf"} {
		if x, ok := v.get(k); ok && len(x.arr) == 0 {
			return &SchemaError{Path: path, Keyword: k, Msg: "an empty list admits no value"}
		}
	}
	if r, ok := v.get("required"); ok {
		for _, x := range r.arr {
			if x.kind != vString {
				return &SchemaError{Path: path, Keyword: "required", Msg: "want a list of property names"}
			}
		}
	}
	return nil
}

func checkChildren(v value, path string, strict bool) error {
	for _, m := range v.obj {
		p := path + "/" + m.key
		var kids []struct {
			path string
			v    value
		}
		switch m.key {
		case "properties", "$defs", "definitions":
			for _, x := range m.val.obj {
				kids = append(kids, struct {
					path string
					v    value
				}{p + "/" + x.key, x.val})
			}
		case "anyOf", "oneOf", "allOf", "prefixItems":
			for i, x := range m.val.arr {
				kids = append(kids, struct {
					path string
					v    value
				}{fmt.Sprintf("%s/%d", p, i), x})
			}
		case "items":
			if m.val.kind == vArray {
				for i, x := range m.val.arr {
					kids = append(kids, struct {
						path string
						v    value
					}{fmt.Sprintf("%s/%d", p, i), x})
				}
			} else {
				kids = append(kids, struct {
					path string
					v    value
				}{p, m.val})
			}
		case "additionalProperties":
			if m.val.kind == vObject {
				kids = append(kids, struct {
					path string
					v    value
				}{p, m.val})
			}
		}
		for _, k := range kids {
			if err := checkSchema(k.v, k.path, strict); err != nil {
				return err
			}
		}
	}
	return nil
}

// disjoint reports whether no value can match two of alts, so that a
// grammar for "any of them" gives output that matches exactly one.
func (c *converter) disjoint(alts []value) bool {
	for i := range alts {
		for j := i + 1; j < len(alts); j++ {
			if !c.pairDisjoint(c.deref(alts[i]), c.deref(alts[j])) {
				return false
			}
		}
	}
	return true
}

func (c *converter) deref(v value) value {
	for range 16 {
		ref, ok := v.get("$ref")
		if !ok {
			break
		}
		v = c.refs[ref.str]
	}
	return v
}

func (c *converter) pairDisjoint(a, b value) bool {
	ka, kb := kinds(a), kinds(b)
	if ka != nil && kb != nil && !slices.ContainsFunc(ka, func(k string) bool { return slices.Contains(kb, k) }) {
		return true
	}
	if va, vb := constants(a), constants(b); va != nil && vb != nil {
		return !slices.ContainsFunc(va, func(x string) bool { return slices.Contains(vb, x) })
	}
	if slices.Equal(ka, []string{"object"}) && slices.Equal(kb, []string{"object"}) {
		return requiresMissing(a, b) && requiresMissing(b, a)
	}
	return false
}

// requiresMissing: a requires a property b does not have.
func requiresMissing(a, b value) bool {
	req, _ := a.get("required")
	props, _ := b.get("properties")
	for _, r := range req.arr {
		if !props.has(r.str) {
			return true
		}
	}
	return false
}

// kinds lists the JSON types a schema admits (integer counts as number);
// nil is any.
func kinds(v value) []string {
	var out []string
	add := func(t string) {
		if t == "integer" {
			t = "number"
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	of := func(x value) string {
		return [...]string{vNull: "null", vBool: "boolean", vNumber: "number", vString: "string", vArray: "array", vObject: "object"}[x.kind]
	}
	switch typ, _ := v.get("type"); {
	case typ.kind == vString:
		add(typ.str)
	case typ.kind == vArray:
		for _, t := range typ.arr {
			add(t.str)
		}
	case v.has("const"):
		k, _ := v.get("const")
		add(of(k))
	case v.has("enum"):
		e, _ := v.get("enum")
		for _, x := range e.arr {
			add(of(x))
		}
	case v.has("properties"):
		add("object")
	case v.has("items") || v.has("prefixItems"):
		add("array")
	default:
		return nil
	}
	slices.Sort(out)
	return out
}

func constants(v value) []string {
	if k, ok := v.get("const"); ok {
		return []string{k.dump()}
	}
	e, ok := v.get("enum")
	if !ok {
		return nil
	}
	var out []string
	for _, x := range e.arr {
		out = append(out, x.dump())
	}
	return out
}
