package scaffold

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/wasmsched/wasmsched/host/config"
)

// --module is written into go.mod: a newline added a replace directive of
// the user's choosing. A module path must be one go mod init accepts, and
// nothing is written when it is not.
func TestInitRefusesAModulePathGoWouldNot(t *testing.T) {
	for _, mod := range []string{
		"example.com/x\nreplace github.com/wasmsched/wasmsched/abi => /tmp/evil",
		"example.com/a b",
		`example.com/"q"`,
		"example.com//x",
		"../x",
		"example.com/x // comment",
	} {
		dir := filepath.Join(t.TempDir(), "p")
		_, err := Init(Options{Name: "p", Dir: dir, Module: mod})
		if err == nil || !strings.Contains(err.Error(), "malformed module path") {
			t.Errorf("module %q: err = %v, want a malformed module path", mod, err)
		}
		if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
			t.Errorf("module %q: Init wrote %s", mod, dir)
		}
	}
	for _, mod := range []string{"github.com/me/gpu-pool", "gpupool", "example.com/team/gpu-pool/v2"} {
		dir := filepath.Join(t.TempDir(), "p")
		if _, err := Init(Options{Name: "p", Dir: dir, Module: mod}); err != nil {
			t.Errorf("module %q: %v", mod, err)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil || !strings.HasPrefix(string(b), "module "+mod+"\n") {
			t.Errorf("module %q: go.mod starts %q, %v", mod, b[:min(len(b), 60)], err)
		}
	}
}

// Every name Init accepts gives a configuration that reads back with the
// same names: "true", "null", "yes", "on" and the like were YAML
// booleans or null, unquoted.
func TestInitWritesNamesYAMLReadsBack(t *testing.T) {
	for _, name := range []string{"true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf"} {
		dir := filepath.Join(t.TempDir(), name)
		if _, err := Init(Options{Name: name, Dir: dir}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "wasmsched.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(b)
		if err != nil {
			t.Errorf("%s: wasmsched.yaml does not parse: %v\n%s", name, err, b)
			continue
		}
		plugin := pluginName(name)
		if len(cfg.Modules) != 1 || cfg.Modules[0].Name != name || cfg.Modules[0].Path != name+".wasm" {
			t.Errorf("%s: modules = %+v", name, cfg.Modules)
		}
		if f := cfg.Profiles[0].Plugins.Filter.Enabled; len(f) != 1 || f[0].Name != plugin {
			t.Errorf("%s: filter plugins = %+v, want %s", name, f, plugin)
		}
	}
	// The other kinds name the plugin elsewhere (eviction policies, vpod
	// policies, DefaultPreemption's args): each must read back too.
	for _, kind := range Kinds[1:] {
		for _, name := range []string{"true", "null", "on"} {
			dir := filepath.Join(t.TempDir(), name)
			if _, err := Init(Options{Name: name, Dir: dir, Kind: kind}); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "wasmsched.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(b)
			if err != nil {
				t.Errorf("%s %s: wasmsched.yaml does not parse: %v\n%s", kind, name, err, b)
				continue
			}
			if len(cfg.Modules) != 1 || cfg.Modules[0].Name != name {
				t.Errorf("%s %s: modules = %+v", kind, name, cfg.Modules)
			}
			if !strings.Contains(string(b), strconv.Quote(pluginName(name))) {
				t.Errorf("%s %s: the plugin's name is not quoted:\n%s", kind, name, b)
			}
		}
	}
}

// A plugin name whose Go type would clash with the generated code is
// refused; reservedIdents is every exported top-level name the templates
// declare, so the list cannot fall behind them.
func TestReservedIdentsAreTheTemplates(t *testing.T) {
	for _, name := range []string{"new", "registration", "test-args"} {
		if _, err := Init(Options{Name: name, Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "would clash") {
			t.Errorf("name %q: err = %v", name, err)
		}
	}
	if len(reservedIdents) != len(Kinds) {
		t.Fatalf("reservedIdents has %d kinds, Kinds %d", len(reservedIdents), len(Kinds))
	}
	const probe = "zz-probe"
	for _, kind := range Kinds {
		d := templateData(Options{Name: probe, Kind: kind})
		var got []string
		for _, name := range []string{"plugin.go", "plugin_test.go", "module_test.go"} {
			file := "template/" + string(kind) + "/" + name + ".tmpl"
			tm, err := template.New(name+".tmpl").Funcs(templateFuncs).ParseFS(templates, file)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := tm.Execute(&b, d); err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, b.Bytes(), parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, decl := range f.Decls {
				got = append(got, declNames(decl)...)
			}
		}
		var exported []string
		for _, n := range got {
			if ast.IsExported(n) && n != d.Plugin {
				exported = append(exported, n)
			}
		}
		slices.Sort(exported)
		want := slices.Sorted(slices.Values(reservedIdents[kind]))
		if !slices.Equal(exported, want) {
			t.Errorf("the %s templates declare %v; reservedIdents has %v", kind, exported, want)
		}
	}
}

// declNames are the top-level names a declaration introduces (methods
// excepted: they live in their type's scope).
func declNames(decl ast.Decl) []string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
	case *ast.GenDecl:
		var out []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				out = append(out, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out = append(out, n.Name)
				}
			}
		}
		return out
	}
	return nil
}
