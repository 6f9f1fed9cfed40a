package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// moduleFile is one non-test Go file of the module, parsed without its
// comments (what the rules below look at is code).
type moduleFile struct {
	rel  string // slash path from the module root
	fset *token.FileSet
	file *ast.File
}

// moduleFiles parses every non-test Go file of the module.
func moduleFiles(t *testing.T) []moduleFile {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skipf("module root not found from %s: %v", root, err)
	}
	var files []moduleFile
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, moduleFile{filepath.ToSlash(rel), fset, f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d Go files under %s", len(files), root)
	}
	return files
}

// TestProtocolsAreNamedOnlyInTheirPackages: outside a protocol's own
// package and the list, no code names ftp, smtp or imap (identifiers and
// strings; comments may): everything else reaches them through their
// descriptors, so adding a protocol touches nothing else.
func TestProtocolsAreNamedOnlyInTheirPackages(t *testing.T) {
	for _, f := range moduleFiles(t) {
		if under(f.rel, "internal/proto/all") || under(f.rel, "internal/proto/ftp") ||
			under(f.rel, "internal/proto/smtp") || under(f.rel, "internal/proto/imap") {
			continue
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			var text string
			switch n := n.(type) {
			case *ast.Ident:
				text = n.Name
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					text = n.Value
				}
			default:
				return true
			}
			low := strings.ToLower(text)
			for _, name := range []string{"ftp", "smtp", "imap"} {
				if strings.Contains(low, name) {
					t.Errorf("%s: %s names %s", f.fset.Position(n.Pos()), shorten(text), name)
				}
			}
			return true
		})
	}
}

// TestFunctionsAreShort: no function over 80 lines outside the BPF
// programs (instruction lists read as one); in cmd/v6lab none over 60 but
// the declarations of a command and its flags, and the command's files
// together at most 1,500 lines: the commands parse and print, the work is
// in the packages.
func TestFunctionsAreShort(t *testing.T) {
	cmdLines := 0
	for _, f := range moduleFiles(t) {
		inCmd := under(f.rel, "cmd/v6lab")
		if inCmd {
			cmdLines += f.fset.Position(f.file.End()).Line
		}
		if under(f.rel, "internal/lab/bpf") {
			continue
		}
		for _, d := range f.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := f.fset.Position(fn.End()).Line - f.fset.Position(fn.Pos()).Line + 1
			limit := 80
			if inCmd && !declaresCommand(fn) {
				limit = 60
			}
			if lines > limit {
				t.Errorf("%s: %s is %d lines (at most %d)", f.fset.Position(fn.Pos()), fn.Name.Name, lines, limit)
			}
		}
	}
	if cmdLines > 1500 {
		t.Errorf("cmd/v6lab has %d lines of code (at most 1,500)", cmdLines)
	}
}

// declaresCommand says whether fn declares a command and its flags
// (newRunCmd).
func declaresCommand(fn *ast.FuncDecl) bool {
	return strings.HasPrefix(fn.Name.Name, "new") && strings.HasSuffix(fn.Name.Name, "Cmd")
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
