// Package scaffold writes a ready plugin project: a go.mod wired to a copy
// of the guest SDK that this binary carries (the SDK is on no module proxy,
// so a project must not need the network to find it), a plugin of one kind
// (Filter and Score, an eviction policy, a vpod predicate or priority, a
// preemption victim policy), its tests, a configuration that enables it and
// a small cluster manifest on which `wasmsched simulate` shows it at work.
// `wasmsched plugin init` is its command.
package scaffold

import (
	"archive/zip"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"golang.org/x/mod/module"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// templates holds template/shared (written for every kind) and one
// directory per Kind.
//
//go:embed template
var templates embed.FS

// Kind is what a project's plugin is: which extension points of
// guest-sdk/plugin it implements, and so which example the scaffold
// writes.
type Kind string

// The kinds Init scaffolds.
const (
	// KindFilterScore is a Filter and a Score plugin for a scheduling
	// profile (the default).
	KindFilterScore Kind = "filter-score"
	// KindEviction is an eviction policy (plugin.ThresholdPlugin) for the
	// eviction coordinator.
	KindEviction Kind = "eviction"
	// KindVPodPriority is a vpod priority (plugin.VPodPriorityPlugin) for
	// a vpod scheduler's policy.
	KindVPodPriority Kind = "vpod-priority"
	// KindVPodPredicate is a vpod predicate (plugin.VPodPredicatePlugin).
	KindVPodPredicate Kind = "vpod-predicate"
	// KindVictim is a preemption victim policy (plugin.PreemptionPlugin)
	// that DefaultPreemption's victimPolicy names.
	KindVictim Kind = "victim"
)

// Kinds lists every Kind, the default first, as --kind's help shows them.
var Kinds = []Kind{KindFilterScore, KindEviction, KindVPodPriority, KindVPodPredicate, KindVictim}

// SDKArchive is a zip of the abi and guest-sdk modules' sources (tests
// left out) under abi/ and guest-sdk/, as BuildSDKArchive makes it from the
// repository. It is committed (go:embed cannot reach other modules'
// directories) and a test fails when it no longer matches the sources:
// `go generate ./host/tools/scaffold` refreshes it.
//
//go:generate go run ./gensdk
//go:embed sdk.zip
var SDKArchive []byte

// SDKDir is where a project keeps its SDK copy; the leading dot keeps
// `go test ./...` and `go vet ./...` out of it.
const SDKDir = ".wasmsched/sdk"

// Options say what to scaffold.
type Options struct {
	// Name is the project's name: a directory name and the module's base
	// (lower case letters, digits, '-' and '_'; starting with a letter).
	Name string
	// Dir is where to write it; default: ./Name. It must be empty or
	// absent unless UpdateSDK is set.
	Dir string
	// Module is the Go module path; default: example.com/Name. It must be
	// a path `go mod init` accepts (golang.org/x/mod/module's
	// CheckImportPath): it is written into go.mod, where a newline or a
	// quote would add directives of its own.
	Module string
	// Kind is the plugin's kind; "" is KindFilterScore.
	Kind Kind
	// UpdateSDK rewrites only the SDK copy of an existing project.
	UpdateSDK bool
}

func (o Options) kind() Kind {
	if o.Kind == "" {
		return KindFilterScore
	}
	return o.Kind
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// reservedIdents are, per kind, the top-level identifiers of the
// generated Go files (TestReservedIdentsAreTheTemplates keeps the lists
// whole): a plugin type of one of these names would not compile.
var reservedIdents = map[Kind][]string{
	KindFilterScore: {"New", "Registration", "TestArgs", "TestBuiltModuleInSimulate",
		"TestFilterKeepsPodsInTheirPool", "TestScorePrefersFreeCPU"},
	KindEviction: {"New", "Registration", "TestArgs", "TestBuiltModuleInSimulate",
		"TestEvictsTheLowestPriorityPodOverTheLimit", "TestThresholdMetAboveMaxPods"},
	KindVPodPriority: {"New", "Registration", "TestArgs", "TestBuiltModuleInSimulate",
		"TestPlacesOnTheFreestPods", "TestScoresFreeCapacity"},
	KindVPodPredicate: {"New", "Registration", "TestArgs", "TestBuiltModuleInSimulate",
		"TestKeepsTheReserveFree", "TestRefusesPodsAtTheReserve"},
	KindVictim: {"New", "Registration", "TestArgs", "TestBuiltModuleInSimulate",
		"TestNeverChoosesProtectedPods", "TestRanksFewestVictimsFirst"},
}

// check refuses what Init cannot write into a project that builds: every
// string the user gives that ends up in a generated file is checked here.
func (o Options) check() error {
	if _, ok := reservedIdents[o.kind()]; !ok {
		return fmt.Errorf("plugin kind %q: want one of %s", o.Kind, kindList())
	}
	if !validName.MatchString(o.Name) {
		return fmt.Errorf("plugin name %q: want lower-case letters, digits, '-' or '_', starting with a letter (at most 63)", o.Name)
	}
	if p := pluginName(o.Name); slices.Contains(reservedIdents[o.kind()], p) {
		return fmt.Errorf("plugin name %q: its Go type %s would clash with the generated code's %s; choose another name", o.Name, p, p)
	}
	if o.Module != "" {
		if err := module.CheckImportPath(o.Module); err != nil {
			var pe *module.InvalidPathError
			if errors.As(err, &pe) {
				pe.Kind = "module" // as go mod init says it
			}
			return err
		}
	}
	return nil
}

// Init writes the project and returns the files it wrote (relative to
// Dir), SDK copy excluded.
func Init(o Options) ([]string, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		dir = o.Name
	}
	if o.UpdateSDK {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			return nil, fmt.Errorf("update SDK in %s: not a plugin project (no go.mod)", dir)
		}
		if err := os.RemoveAll(filepath.Join(dir, SDKDir)); err != nil {
			return nil, fmt.Errorf("update SDK: %w", err)
		}
		return nil, extractSDK(filepath.Join(dir, SDKDir))
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty: scaffold into a new or empty directory (or --update-sdk)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	data := templateData(o)
	names, err := templateFiles(o.kind())
	if err != nil {
		return nil, err
	}
	var wrote []string
	for _, name := range names {
		out := strings.TrimSuffix(path.Base(name), ".tmpl")
		t, err := template.New(path.Base(name)).Funcs(templateFuncs).ParseFS(templates, name)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, out), b.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", out, err)
		}
		wrote = append(wrote, out)
	}
	return wrote, extractSDK(filepath.Join(dir, SDKDir))
}

// templateFiles are the templates of a kind's project, shared ones
// included, sorted by the file they write.
func templateFiles(k Kind) ([]string, error) {
	shared, err := fs.Glob(templates, "template/shared/*.tmpl")
	if err != nil {
		return nil, err
	}
	own, err := fs.Glob(templates, "template/"+string(k)+"/*.tmpl")
	if err != nil {
		return nil, err
	}
	names := append(shared, own...)
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(path.Base(a), path.Base(b)) })
	return names, nil
}

// kindList is the kinds for a message: "filter-score, eviction, ...".
func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// templateFuncs are the templates' functions: yaml writes a YAML string
// quoted, so that a name such as "true", "null", "yes" or "on" stays a
// string (sigs.k8s.io/yaml reads YAML 1.1, where the last two are
// booleans).
var templateFuncs = template.FuncMap{"yaml": strconv.Quote}

// data is what the templates see.
type data struct {
	Dir, Module, Plugin, Label, ABI string
}

func templateData(o Options) data {
	module := o.Module
	if module == "" {
		module = "example.com/" + o.Name
	}
	label := "example.com/pool"
	if o.kind() == KindVictim {
		label = "example.com/protected"
	}
	return data{
		Dir:    o.Name,
		Module: module,
		Plugin: pluginName(o.Name),
		Label:  label,
		ABI:    fmt.Sprintf("v%d.%d", abi.VersionMajor, abi.VersionMinor),
	}
}

// pluginName turns a project name into an exported Go identifier:
// "gpu-only" → "GpuOnly".
func pluginName(name string) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		if r == '-' || r == '_' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

// extractSDK unpacks SDKArchive into dir.
func extractSDK(dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(SDKArchive), int64(len(SDKArchive)))
	if err != nil {
		return fmt.Errorf("SDK archive in this binary: %w", err)
	}
	for _, f := range zr.File {
		if !fs.ValidPath(f.Name) || f.FileInfo().IsDir() {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("extract SDK: %w", err)
		}
		if err := writeZipFile(f, dst); err != nil {
			return fmt.Errorf("extract SDK %s: %w", f.Name, err)
		}
	}
	return nil
}

func writeZipFile(f *zip.File, dst string) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// maxSDKSourceBytes bounds one source file of the SDK archive; the
// largest is a few tens of KiB.
const maxSDKSourceBytes = 4 << 20

// sdkModules are the repository's module directories the archive carries.
var sdkModules = []string{"abi", "guest-sdk"}

// BuildSDKArchive zips the SDK modules' sources from the repository at
// root: go.mod files and non-test .go files, sorted, with fixed times and no
// compression, so the same sources always give the same bytes.
func BuildSDKArchive(root string) ([]byte, error) {
	var files []string
	for _, m := range sdkModules {
		err := filepath.WalkDir(filepath.Join(root, m), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			n := d.Name()
			if n == "go.mod" || (strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("SDK sources: %w", err)
		}
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range files { // WalkDir visits in lexical order
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		b, err := boundedread.ReadFile(p, maxSDKSourceBytes, boundedread.Regular, "an SDK source file")
		if err != nil {
			return nil, fmt.Errorf("SDK sources: %w", err)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: filepath.ToSlash(rel), Method: zip.Store})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("SDK sources: no files under " + root)
	}
	return buf.Bytes(), nil
}
