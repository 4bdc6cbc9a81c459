package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var userX = []byte(`[{"role":"user","content":"x"}]`)

// TestHostileTemplatesBreakTheirBudget: a chat template is code from the
// model file. Each of these took the daemon down (stack overflow, out of
// memory) or burned a core for tens of seconds when a request's content
// reached it (the test render at compile does not); now each ends its render
// with a *TemplateError naming the budget it broke, within about the time
// budget, and the next render works.
func TestHostileTemplatesBreakTheirBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("renders up to the time budget")
	}
	many := make([]string, 4096)
	for i := range many {
		many[i] = `{"role":"user","content":"m"}`
	}
	conversation4096 := []byte("[" + strings.Join(many, ",") + "]")
	boom := []byte(`[{"role":"user","content":"boom"}]`)
	for _, tc := range []struct {
		name, src string
		msgs      []byte
		budget    string
	}{
		{"recursion reached by content", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{% for m in messages %}{% if m.content == 'boom' %}{{ f(0) }}{% endif %}{{ m.content }}{% endfor %}`, boom, "stack"},
		{"indent", `{% if messages[0].content == 'boom' %}{{ messages[0].content | indent(100000000000) }}{% endif %}`, boom, "memory"},
		{"tojson indent", `{% if messages[0].content == 'boom' %}{{ messages | tojson(indent=100000000000) }}{% endif %}`, boom, "memory"},
		// Memory runs out first, unless a loaded machine (or the race
		// detector) is slow enough for the clock to.
		{"repetition in a loop", `{% set ns = namespace(s='') %}{% if messages[0].content == 'boom' %}{% for i in range(1000) %}{% set ns.s = ns.s ~ ('x' * 60000000) %}{% endfor %}{% endif %}{{ ns.s | length }}`, boom, "memory|time"},
		{"nested range loops", `{% if messages[0].content == 'boom' %}{% for i in range(65536) %}{% for j in range(65536) %}{% endfor %}{% endfor %}{% endif %}`, boom, "time"},
		{"quadratic in the conversation", `{% for a in messages %}{% for b in messages %}{% for c in messages %}{% endfor %}{% endfor %}{% endfor %}`, conversation4096, "time"},
		{"output", `{% for m in messages %}{% if m.content == 'boom' %}{{ 'x' * 60000000 }}{% endif %}{% endfor %}`, boom, "output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The time budget is short where time is what breaks, and roomy
			// where it must not be what ends a render first; a 16 MiB stack
			// keeps the recursion well inside it under the race detector.
			limits := Limits{Time: 5 * time.Second, Memory: 256 << 20, Stack: 16 << 20, Output: 1 << 20}
			if strings.Contains(tc.budget, "time") {
				limits.Time = 1500 * time.Millisecond
			}
			tmpl, err := CompileLimits(tc.name, tc.src, limits)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			defer tmpl.Close()
			start := time.Now()
			_, err = tmpl.Render(context.Background(), Input{Messages: tc.msgs})
			took := time.Since(start)
			var te *TemplateError
			if !errors.As(err, &te) || !slices.Contains(strings.Split(tc.budget, "|"), te.Budget) || te.Compile {
				t.Fatalf("render: %v (budget %q), want a template error on the %s budget", err, budgetOf(err), tc.budget)
			}
			if took > limits.Time+time.Second {
				t.Errorf("the render took %v, the time budget is %v", took, limits.Time)
			}
			t.Logf("%s after %v", te, took.Round(time.Millisecond))
			// A fresh worker takes the next render.
			if _, err := tmpl.Render(context.Background(), Input{Messages: []byte(`[{"role":"user","content":""}]`)}); err != nil &&
				!errors.As(err, &te) {
				t.Fatalf("the next render: %v", err)
			}
		})
	}
}

func budgetOf(err error) string {
	var te *TemplateError
	if errors.As(err, &te) {
		return te.Budget
	}
	return ""
}

// TestTemplateThatFailsItsTestRender: unconditional recursion crashed the
// daemon at start (a template is test-rendered when compiled), a crash loop
// under systemd. Now Compile returns a compile error naming the budget, so
// the daemon can serve plain prompts and say why chat is off.
func TestTemplateThatFailsItsTestRender(t *testing.T) {
	for src, budget := range map[string]string{
		`{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`:                                "stack",
		`{% for i in range(65536) %}{% for j in range(65536) %}{% endfor %}{% endfor %}`: "time",
	} {
		// The race detector slows a deep recursion: a roomy time budget
		// where the stack must be what breaks.
		lim := Limits{Time: 10 * time.Second, Stack: 16 << 20}
		if budget == "time" {
			lim.Time = time.Second
		}
		_, err := CompileLimits("t", src, lim)
		var te *TemplateError
		if !errors.As(err, &te) || !te.Compile || te.Budget != budget || !strings.Contains(err.Error(), "test render") {
			t.Errorf("%s: %v, want a compile error on the %s budget", src, err, budget)
		}
	}
}

// TestRenderStopsWithItsContext: a client that gives up stops the render
// at once (its worker is killed), and the template goes on serving.
func TestRenderStopsWithItsContext(t *testing.T) {
	tmpl, err := CompileLimits("slow", `{% for m in messages %}{% if m.content == 'slow' %}{% for i in range(65536) %}{% for j in range(65536) %}{% endfor %}{% endfor %}{% endif %}ok{% endfor %}`,
		Limits{Time: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer tmpl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = tmpl.Render(ctx, Input{Messages: []byte(`[{"role":"user","content":"slow"}]`)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("render: %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the render stopped after %v, its context after 200ms", took)
	}
	if got, err := tmpl.Render(context.Background(), Input{Messages: userX}); err != nil || got != "ok" {
		t.Fatalf("after a cancelled render: %q, %v", got, err)
	}
	tmpl.pool.mu.Lock()
	live := tmpl.pool.live
	tmpl.pool.mu.Unlock()
	if live != 1 {
		t.Fatalf("%d workers live after the renders, want the one kept warm", live)
	}
}

// TestConcurrentRendersShareTheWorkers: more renders than workers wait
// their turn and all succeed; a hostile render among them ends alone.
func TestConcurrentRendersShareTheWorkers(t *testing.T) {
	tmpl, err := CompileLimits("chatml-ish", `{% for m in messages %}{% if m.content == 'boom' %}{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}{% endif %}<{{ m.content }}>{% endfor %}`,
		// The race detector on a busy machine slows the recursion past the
		// default 2 s (CI failed so): a small stack and a roomy clock make the
		// stack what ends the hostile render.
		Limits{Workers: 2, Stack: 16 << 20, Time: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tmpl.Close()
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			content := fmt.Sprint(i)
			if i == 5 {
				content = "boom"
			}
			got, err := tmpl.Render(context.Background(), Input{Messages: []byte(`[{"role":"user","content":"` + content + `"}]`)})
			switch {
			case i == 5 && budgetOf(err) != "stack":
				errs <- fmt.Errorf("boom: %v", err)
			case i != 5 && (err != nil || got != "<"+content+">"):
				errs <- fmt.Errorf("%d: %q %v", i, got, err)
			default:
				errs <- nil
			}
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// templateFragments are the pieces FuzzTemplateBudget builds templates
// from: loops, recursion, the filters that repeat or pad, and plain output.
var templateFragments = []string{
	"{% for i in range(%N) %}", "{% endfor %}", "{% macro f(n) %}", "{% endmacro %}", "{{ f(n + 1) }}", "{{ f(0) }}",
	"{{ messages[0].content | indent(%N) }}", "{{ 'x' * %N }}", "{{ messages | tojson(indent=%N) }}",
	"{% set ns = namespace(s='') %}", "{% set ns.s = ns.s ~ ns.s ~ 'ab' %}", "{{ ns.s | length }}",
	"{% for m in messages %}", "{{ m.content }}", "{% if m.content == 'x' %}", "{% endif %}",
	"{{ range(%N) | list | length }}", "{{ (messages * %N) | length }}", "{{ 'ab' | center(%N) }}", "text",
}

// FuzzTemplateBudget: whatever template the fragments make, Compile and
// Render return within the time budget (plus the time to start a worker),
// with a *TemplateError or ErrInvalidMessages at worst, and this process
// lives on.
func FuzzTemplateBudget(f *testing.F) {
	for _, seed := range []string{"\x00\x02\x04\x01\x03\x05", "\x06\x07", "\x09\x0a\x0a\x0a\x0a\x0b", "\x0c\x0d\x0e\x0f\x10", "\x02\x04\x03\x05\x07"} {
		f.Add([]byte(seed))
	}
	limits := Limits{Time: 300 * time.Millisecond, Memory: 128 << 20, Stack: 16 << 20, Output: 1 << 20, Workers: 1}
	f.Fuzz(func(t *testing.T, b []byte) {
		var src strings.Builder
		for i := 0; i < len(b) && i < 24; i++ {
			frag := templateFragments[int(b[i])%len(templateFragments)]
			n := []string{"3", "1000", "100000000", "100000000000"}[int(b[i]>>5)%4]
			src.WriteString(strings.ReplaceAll(frag, "%N", n))
		}
		start := time.Now()
		tmpl, err := CompileLimits("fuzz", src.String(), limits)
		var te *TemplateError
		if err != nil {
			if !errors.As(err, &te) {
				t.Fatalf("%q: compile: %v", src.String(), err)
			}
		} else {
			defer tmpl.Close()
			_, err = tmpl.Render(context.Background(), Input{Messages: userX})
			if err != nil && !errors.As(err, &te) && !errors.Is(err, ErrInvalidMessages) {
				t.Fatalf("%q: render: %v", src.String(), err)
			}
		}
		if took := time.Since(start); took > 2*limits.Time+2*time.Second {
			t.Fatalf("%q took %v", src.String(), took)
		}
	})
}
