package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostModule is the import path prefix of the host's packages.
const hostModule = "github.com/wasmsched/wasmsched/host/"

// hostLayers ranks the host's top folders as docs/ARCHITECTURE.md's Map
// orders them: a package may import its own layer and those ranked lower.
// host/internal is left out: its helpers serve every layer.
var hostLayers = map[string]int{
	"config":   0,
	"metrics":  0,
	"platform": 1,
	"engines":  2,
	"run":      3,
	"tools":    4,
}

// layerOf returns the layer of a path relative to host/ ("engines/vpod"),
// and false for host/internal or a folder the Map does not rank.
func layerOf(rel string) (string, int, bool) {
	top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	rank, ok := hostLayers[top]
	return top, rank, ok
}

// The Map promises that the host reads top-down: the platform never
// reaches into an engine, an engine never into a way to run. An import
// against that order in non-test code fails here, naming the file.
func TestHostLayersImportOnlyUpward(t *testing.T) {
	host := filepath.Join(repoRoot(t), "host")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(host, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(host, path)
		top, rank, ok := layerOf(rel)
		if !ok {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			dep, found := strings.CutPrefix(p, hostModule)
			if !found {
				continue
			}
			depTop, depRank, ok := layerOf(dep)
			if ok && depRank > rank {
				t.Errorf("host/%s imports host/%s: %s may not import from %s (docs/ARCHITECTURE.md, Map)", rel, dep, top, depTop)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files under host/; the layout moved?", checked)
	}
}

// Every folder of the host's layers is named in the Map, so a new
// package cannot land without a line that says where it belongs.
func TestMapNamesEveryHostFolder(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := section(t, string(doc), "## Map")
	for top := range hostLayers {
		if !strings.Contains(m, "host/"+top) {
			t.Errorf("the Map does not name host/%s", top)
		}
		entries, err := os.ReadDir(filepath.Join(root, "host", top))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == "testdata" {
				continue
			}
			if !strings.Contains(m, "`"+e.Name()+"`") && !strings.Contains(m, "`"+e.Name()+"/`") && !strings.Contains(m, top+"/"+e.Name()) {
				t.Errorf("the Map does not name host/%s/%s", top, e.Name())
			}
		}
	}
}
