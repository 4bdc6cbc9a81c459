package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/batchd/batchd"

// deps lists the packages of this module that pkg imports, directly or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+pkg)
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var ours []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module+"/") && p != module+"/"+pkg {
			ours = append(ours, strings.TrimPrefix(p, module+"/"))
		}
	}
	return ours
}

func root(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "..", "..")
}

// rule is what one package may import of ours: the rooms listed and
// whatever they import in turn (a rule names only its direct neighbours).
type rule struct {
	pkg   string
	rooms []string
}

// rules is the map of docs/ARCHITECTURE.md, room by room. Every package
// of the module must have one (TestEveryPackageHasARule).
var rules = []rule{
	// Leaves: nothing of ours.
	{"jsontext", nil}, // JSON text in order, one escaping, one depth bound
	{"kvcache", nil},
	{"quant", nil},
	{"gguf", nil},
	{"sample", nil},
	{"hwprofile", nil},
	{"tune", nil},         // the matrix, the knee, the rollout rule: cells run and targets live elsewhere
	{"serve/models", nil}, // bookkeeping: the serving layer's loader opens the files
	// The model runtime and compute.
	{"tokenizer", []string{"gguf"}}, // a vocabulary, no weights
	{"model", []string{"gguf", "quant", "tokenizer"}},
	{"backend", []string{"quant"}},
	{"backend/cpu", []string{"backend", "model"}},
	{"backend/backends", []string{"backend/cpu"}},
	{"backend/backendtest", []string{"backend", "model", "testing/synth", "testing/testmodels"}}, // the suite every backend passes
	// The request-format libraries: text in, text out.
	{"grammar", []string{"jsontext"}},             // token texts come from the engine; no vocabulary or tensors
	{"chat", []string{"jsontext"}},                // templates, in worker processes
	{"toolcall", []string{"grammar", "jsontext"}}, // formats, grammars, a parser; no tokens
	// The batching core.
	{"engine/sched", []string{"kvcache"}}, // pure logic on a pool: no requests, tensors or clock
	{"engine", []string{"engine/sched", "backend", "model", "sample", "grammar", "kvcache"}},
	// The protocol and the transports.
	{"ipc/wire", []string{"jsontext"}},
	{"ipc", []string{"ipc/wire"}},
	{"ipc/ipctest", []string{"ipc"}},
	{"clients/go", []string{"ipc/wire"}},
	{"httpapi", []string{"ipc"}},                      // a translator onto ipc.Backend; never the engine
	{"httpapi/ollama", []string{"httpapi", "ipc"}},    // routes on httpapi's listeners
	{"httpapi/anthropic", []string{"httpapi", "ipc"}}, // Anthropic's Messages API, likewise
	{"kvevents", []string{"kvcache"}},                 // the cache's events on a ZeroMQ socket; no engine
	// The config file: readable and comparable without the engine or a model.
	{"config", []string{"engine/sched", "backend", "toolcall", "ipc", "clients/go", "kvevents"}},
	// The serving layer: between the transports and the engine.
	{"serve", []string{"engine", "config", "chat", "toolcall", "backend/backends", "hwprofile", "ipc", "serve/models"}},
	{"metrics", []string{"engine", "config", "ipc"}},
	// The daemon's lifecycle and the programs.
	{"daemon", []string{"serve", "metrics", "config", "httpapi/ollama", "httpapi/anthropic", "kvevents"}},
	{"daemon/daemontest", []string{"daemon"}},
	{"cmd/batchd", []string{"daemon", "serve", "tune/remote"}},
	{"cmd/batchctl", []string{"clients/go", "tune", "tune/remote"}}, // never the engine: a small static binary
	{"tune/remote", []string{"tune", "clients/go"}},                 // a running daemon, through its socket and config file
}

// TestImportRules: each package depends only on its rule's rooms and
// what they depend on.
func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, r := range rules {
		allowed := map[string]bool{}
		for _, room := range r.rooms {
			allowed[room] = true
			for _, d := range deps(t, room) {
				allowed[d] = true
			}
		}
		for _, d := range deps(t, r.pkg) {
			if !allowed[d] {
				t.Errorf("%s depends on %s (its rooms: %v)", r.pkg, d, r.rooms)
			}
		}
	}
}

// TestEveryPackageHasARule: a new room gets its rule in the same change.
func TestEveryPackageHasARule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range rules {
		have[r.pkg] = true
	}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, module+"/")
		if strings.HasPrefix(rel, "testing/") || !strings.HasPrefix(p, module+"/") {
			continue // the harnesses and benchmarks import what they measure
		}
		if !have[rel] {
			t.Errorf("package %s has no import rule: add it to rules and to docs/ARCHITECTURE.md", rel)
		}
	}
}

// TestNoRoomOverAFifth: no room (a top-level folder, or a program under
// cmd/) holds more than a fifth of the product's lines (tests, testing/
// and deploy/ aside): a room that big is two rooms.
func TestNoRoomOverAFifth(t *testing.T) {
	base := root(t)
	lines := map[string]int{}
	total := 0
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || rel == "testing" || rel == "deploy" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		room := parts[0]
		if room == "cmd" && len(parts) > 2 {
			room = parts[0] + "/" + parts[1]
		}
		n := strings.Count(string(b), "\n")
		lines[room] += n
		total += n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for room, n := range lines {
		if 5*n > total {
			t.Errorf("%s holds %d of %d lines (%.0f%%): more than a fifth", room, n, total, 100*float64(n)/float64(total))
		}
	}
}

// TestSizeLimits: no product file over 600 lines, no function over 80.
func TestSizeLimits(t *testing.T) {
	fset := token.NewFileSet()
	base := root(t)
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || rel == "testing" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > 600 {
			t.Errorf("%s: %d lines (limit 600)", rel, n)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > 80 {
				t.Errorf("%s: func %s is %d lines (limit 80)", rel, fd.Name.Name, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestToolsDefaultToTheProduct: every command-line flag --quant-dot (the
// daemon's generate, kernelbench, quantbench) defaults to
// backend.DefaultQuantDot, what the daemon runs: a benchmark that measured
// float while the product runs auto reported a quarter of its decode speed.
func TestToolsDefaultToTheProduct(t *testing.T) {
	fset := token.NewFileSet()
	base := root(t)
	found := 0
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			if err == nil {
				err = filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			for i, a := range call.Args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Value == `"quant-dot"` && i+1 < len(call.Args) {
					found++
					sel, ok := call.Args[i+1].(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "DefaultQuantDot" {
						t.Errorf("%s: flag quant-dot defaults to %s, want backend.DefaultQuantDot", fset.Position(a.Pos()), exprText(call.Args[i+1]))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 3 {
		t.Errorf("found %d quant-dot flags, want generate's, kernelbench's and quantbench's", found)
	}
}

func exprText(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok {
		return lit.Value
	}
	return "an expression"
}
