package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseKeepsOrder: members come in the text's order, repeated keys
// included (Get takes the last); numbers stay as written; nesting past
// MaxDepth and text after the value are errors.
func TestParseKeepsOrder(t *testing.T) {
	v, err := Parse([]byte(`{"z": 1, "a": [true, null, "x"], "z": 1.50e1}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Members) != 3 || v.Members[0].Key != "z" || v.Members[1].Key != "a" || v.Members[2].Value.Text != "1.50e1" {
		t.Fatalf("%+v", v)
	}
	if z, _ := v.Get("z"); z.Text != "1.50e1" {
		t.Errorf("Get(z) = %+v, want the last", z)
	}
	if a := v.Members[1].Value; a.Kind != Array || len(a.Items) != 3 || !a.Items[0].Bool || a.Items[1].Kind != Null || a.Items[2].Text != "x" {
		t.Errorf("array: %+v", a)
	}
	deep := strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)
	if _, err := Parse([]byte(deep)); err == nil {
		t.Errorf("%d levels below the top accepted", MaxDepth+1)
	}
	if _, err := Parse([]byte(strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1))); err != nil {
		t.Errorf("%d levels below the top: %v", MaxDepth, err)
	}
	if _, err := Parse([]byte(`{} {}`)); err == nil {
		t.Error("text after the value accepted")
	}
}

// TestAppendString: what nlohmann escapes and nothing else; the result
// reads back as the same string.
func TestAppendString(t *testing.T) {
	for in, want := range map[string]string{
		"a\"b\\c":        `"a\"b\\c"`,
		"\n\r\t\b\f\x01": `"\n\r\t\b\f\u0001"`,
		"<&> ü 🦙 \x7f":   "\"<&> ü 🦙 \x7f\"",
	} {
		got := Quote(in)
		if got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != in {
			t.Errorf("%s reads back as %q, %v", got, back, err)
		}
	}
}

// TestAppendRoundTrips: Append writes what Parse read, compact, in order,
// numbers as written.
func TestAppendRoundTrips(t *testing.T) {
	for in, want := range map[string]string{
		` {"b": [1, 2.50, -3e2], "a": {"z": null, "y": true, "x": false}, "b": "two"} `: `{"b":[1,2.50,-3e2],"a":{"z":null,"y":true,"x":false},"b":"two"}`,
		`"tab\t \"q\" é"`: `"tab\t \"q\" é"`,
		`[]`:              `[]`,
		`{}`:              `{}`,
	} {
		v, err := Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(Append(nil, v)); got != want {
			t.Errorf("Append(Parse(%s)) = %s, want %s", in, got, want)
		}
	}
}
