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

// TestImportRules: each package may depend only on what its layer allows.
func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, r := range []struct {
		pkg     string
		allowed []string // package prefixes of ours it may depend on
	}{
		{"kvcache", nil},
		{"kvevents", []string{"kvcache"}}, // the cache's events on a ZeroMQ socket; no engine
		{"serve/models", nil},             // bookkeeping: the serving layer's loader opens the files
		{"tune", nil},                     // the matrix, the knee, the rollout rule: cells run and targets live in the daemon
		{"tune/remote", []string{"tune", "clients/go", "ipc/wire"}}, // a running daemon, through its socket and config file
		{"quant", nil},
		{"gguf", nil},
		{"tokenizer", []string{"gguf"}}, // a vocabulary, no weights
		{"sample", nil},
		{"chat", nil},
		{"grammar", nil},                  // token texts come from the engine; no vocabulary or tensors
		{"toolcall", []string{"grammar"}}, // text in, text out: formats, grammars, a parser; no tokens
		{"model", []string{"gguf", "quant", "tokenizer"}},
		{"backend", []string{"quant"}},
		{"engine", []string{"engine/sched", "backend", "model", "gguf", "quant", "tokenizer", "sample", "grammar", "kvcache"}},
		{"engine/sched", []string{"kvcache"}}, // pure logic on a pool: no requests, tensors or clock
		// The file's schema: readable and comparable without the engine or a model.
		{"config", []string{"engine/sched", "backend", "quant", "toolcall", "grammar", "ipc", "clients/go", "kvevents", "kvcache"}},
		{"backend/cpu", []string{"backend", "model", "gguf", "quant", "tokenizer"}},
		{"ipc/wire", nil},
		{"clients/go", []string{"ipc/wire"}},
		{"httpapi", []string{"ipc"}},                   // ipc and ipc/wire: the same backend, policy and wire errors
		{"httpapi/ollama", []string{"httpapi", "ipc"}}, // routes on httpapi's listeners; requests are wire.Submits
	} {
		for _, d := range deps(t, r.pkg) {
			ok := false
			for _, a := range r.allowed {
				if d == a || strings.HasPrefix(d, a+"/") {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s depends on %s (allowed: %v)", r.pkg, d, r.allowed)
			}
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
