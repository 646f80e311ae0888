package boundedread

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unboundedReads are the calls that open or read a file with no bound on
// its size and no check of its kind: a path from the configuration or the
// command line must go through this package instead.
var unboundedReads = map[string][]string{
	"os":        {"ReadFile", "Open", "OpenFile", "DirFS"},
	"io/ioutil": {"ReadFile", "ReadAll", "ReadDir"},
	"syscall":   {"Open", "Openat"},
}

// readAllowed are the files that may make those calls: this package's
// own, which every other read goes through.
var readAllowed = map[string]bool{
	"host/internal/boundedread/boundedread.go": true,
}

// Every file read in the host and the command goes through this package:
// a raw os.ReadFile (unbounded, blocks on a FIFO) in non-test code under
// host/ or cmd/ fails here, naming the file and line. simulate --watch's
// digests read module files with os.ReadFile, so a module swapped for
// /dev/zero grew the process past 3 GiB and a FIFO hung the watch.
func TestEveryFileReadIsBounded(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	files := 0
	for _, top := range []string{"host", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files++
			for _, bad := range unboundedCalls(t, p) {
				if !readAllowed[filepath.ToSlash(rel)] {
					t.Errorf("%s:%s: %s: read files through host/internal/boundedread (a size limit, no FIFO or device; from cmd/, through a host package that does)", rel, bad.pos, bad.call)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("checked only %d files under %s: the walk is broken", files, root)
	}
}

type call struct{ pos, call string }

// unboundedCalls lists the unboundedReads a Go file makes, through
// whatever name it imports their package under.
func unboundedCalls(t *testing.T, path string) []call {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := unboundedReads[ip]; !ok {
			continue
		}
		name := ip[strings.LastIndex(ip, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = ip
	}
	var out []call
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		ip, ok := local[id.Name]
		if !ok {
			return true
		}
		for _, fn := range unboundedReads[ip] {
			if sel.Sel.Name == fn {
				p := fset.Position(sel.Pos())
				out = append(out, call{pos: strconv.Itoa(p.Line), call: ip + "." + fn})
			}
		}
		return true
	})
	return out
}
