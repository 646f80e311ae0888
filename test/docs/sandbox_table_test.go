// Package docs checks that what the documentation cites exists.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the checkout this test file lies in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// section returns the text of the markdown section headed heading, up
// to the next heading of the same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	rest := doc[start+len(heading)+2:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// testFuncs collects the names of every Test, Fuzz and Benchmark
// function declared in the repository's _test.go files, and the text of
// the conformance suite's files (whose rows are cited by name).
func testFuncs(t *testing.T, root string) (map[string]bool, string) {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w+)\(`)
	funcs := map[string]bool{}
	var conformance strings.Builder
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				funcs[m[1]] = true
			}
		}
		if filepath.Base(filepath.Dir(path)) == "backendtest" {
			conformance.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs, conformance.String()
}

// TestSandboxTableNamesExistingTests holds docs/ARCHITECTURE.md's
// "Sandbox guarantees" table to the tests it says prove each bound:
// every test function it names is declared somewhere in the repository,
// and every conformance row it names (`group/case`, `group/*`) is a row
// of host/platform/runtime/backendtest's suite. A renamed or deleted test makes the table
// cite nothing, which is what this catches.
func TestSandboxTableNamesExistingTests(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	table := section(t, string(doc), "## Sandbox guarantees")
	funcs, conformance := testFuncs(t, root)

	names := regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)`").FindAllStringSubmatch(table, -1)
	if len(names) < 10 {
		t.Fatalf("the sandbox table names %d tests; expected a table citing its tests", len(names))
	}
	for _, m := range names {
		if !funcs[m[1]] {
			t.Errorf("docs/ARCHITECTURE.md sandbox table cites %s, which no _test.go declares", m[1])
		}
	}
	rows := regexp.MustCompile("`((?:deadlines|traps|limits|output|replies|abi|pool|twins)/[^`]*)`").FindAllStringSubmatch(table, -1)
	for _, m := range rows {
		if !strings.HasSuffix(m[1], "*") && !strings.Contains(m[1], " ") {
			continue // a path such as abi/limits.go, not a row
		}
		row := strings.TrimSuffix(m[1], "*")
		if !conformanceHas(conformance, row) {
			t.Errorf("docs/ARCHITECTURE.md sandbox table cites conformance row %q, which host/platform/runtime/backendtest does not have", m[1])
		}
	}
}

// conformanceHas tells whether the suite's source builds a row named
// row (a prefix, when the table cites `group/*`). Row names are put
// together from pieces ("deadlines/" + a row's name, "abi/compile
// refuses: " + a case's), so each piece must be spelt out in the source.
func conformanceHas(src, row string) bool {
	if strings.Contains(src, `"`+row) {
		return true
	}
	group, rest, _ := strings.Cut(row, "/")
	if !strings.Contains(src, `"`+group+`/`) {
		return false
	}
	for _, piece := range strings.Split(rest, ": ") {
		if piece != "" && !strings.Contains(src, piece) {
			return false
		}
	}
	return true
}
