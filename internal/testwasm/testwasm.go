// Package testwasm finds the Wasm builds tests load: TinyGo builds are
// committed next to their sources; Go (wasip1) builds are made on first use
// into build/wasm/ under the repository root, so `go test` needs nothing
// but Go.
package testwasm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Guest names a guest module: its main package (relative to plugins-wasm/)
// and where its committed TinyGo build lives (relative to the repo root).
type Guest struct {
	Name    string
	Package string
	TinyGo  string
	// LDFlags are passed to the Go build (-ldflags), for guests whose
	// behaviour is fixed at build time.
	LDFlags string
}

// Known guests.
var (
	Default   = Guest{"default", "./cmd/default", "plugins-wasm/dist/default.tinygo.wasm", ""}
	Misbehave = Guest{"misbehave", "./testguests/misbehave", "plugins-wasm/testguests/misbehave/misbehave.tinygo.wasm", ""}
	// Eviction is the eviction bundle (the default eviction policies).
	Eviction = Guest{"eviction", "./cmd/eviction", "plugins-wasm/dist/eviction.tinygo.wasm", ""}
	// TaintViolation is the example eviction policy module
	// (RemovePodsViolatingNodeTaints).
	TaintViolation = Guest{"taintviolation", "./examples/taintviolation/cmd", "plugins-wasm/examples/taintviolation/taintviolation.tinygo.wasm", ""}
	// ZonePickerA and ZonePickerB are two builds of one Score plugin,
	// ZonePicker, preferring zone-a and zone-b: a policy change by module
	// swap. Go builds only.
	ZonePickerA = Guest{"zonepicker-a", "./testguests/zonepicker", "", "-X main.zone=zone-a"}
	ZonePickerB = Guest{"zonepicker-b", "./testguests/zonepicker", "", "-X main.zone=zone-b"}
)

// Root returns the repository root (the directory with the host go.mod).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && len(b) > 0 &&
			fileExists(filepath.Join(dir, "plugins-wasm", "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repository root not found above the working directory")
		}
		dir = parent
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TinyGoBytes reads a guest's committed TinyGo build.
func TinyGoBytes(tb testing.TB, g Guest) []byte {
	tb.Helper()
	root, err := Root()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, g.TinyGo))
	if err != nil {
		tb.Fatalf("committed TinyGo build of %s: %v (run `make wasm` to rebuild)", g.Name, err)
	}
	return b
}

// RustZonePreference is the committed Rust build of the example module in
// plugins-rust/zonepreference (scripts/build-rust-plugin.sh rebuilds and
// checks it). It has no Go package; tests load it with CommittedBytes, so
// they need no Rust toolchain.
const RustZonePreference = "plugins-rust/dist/zonepreference.wasm"

// CommittedBytes reads a committed build by its repo-relative path.
func CommittedBytes(tb testing.TB, path string) []byte {
	tb.Helper()
	root, err := Root()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		tb.Fatalf("committed build %s: %v", path, err)
	}
	return b
}

var goBuilds sync.Map // guest name -> *goBuild

type goBuild struct {
	once sync.Once
	b    []byte
	err  error
}

// GoBytes returns a guest built with the standard Go toolchain for wasip1
// (built once per test binary, into build/wasm/).
func GoBytes(tb testing.TB, g Guest) []byte {
	tb.Helper()
	v, _ := goBuilds.LoadOrStore(g.Name, &goBuild{})
	gb := v.(*goBuild)
	gb.once.Do(func() { gb.b, gb.err = buildGo(g) })
	if gb.err != nil {
		tb.Fatal(gb.err)
	}
	return gb.b
}

func buildGo(g Guest) ([]byte, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	out := filepath.Join(root, "build", "wasm", g.Name+".go.wasm")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags="+g.LDFlags, "-o", out, g.Package)
	cmd.Dir = filepath.Join(root, "plugins-wasm")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s for wasip1: %v\n%s", g.Package, err, msg)
	}
	return os.ReadFile(out)
}
