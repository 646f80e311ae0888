package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/platform/runtime/backendtest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/internal/testlog"
)

// testdata reads a test guest of this package.
func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInstrumentRefusesTablesAndLocalsOverTheBounds(t *testing.T) {
	mod := func(sections ...[]byte) []byte {
		b := []byte("\x00asm\x01\x00\x00\x00")
		for _, s := range sections {
			b = append(b, s...)
		}
		return b
	}
	memory := []byte{5, 3, 1, 0, 1}
	for name, bin := range map[string][]byte{
		// one funcref table of 2^20 elements
		"huge table": mod([]byte{4, 6, 1, 0x70, 0x00, 0x80, 0x80, 0x40}, memory),
		// nine tables
		"too many tables": mod(append([]byte{4, 28, 9}, bytes.Repeat([]byte{0x70, 0x00, 0x01}, 9)...), memory),
		// a function of type ()->() with 100000 i32 locals
		"too many locals": mod([]byte{1, 4, 1, 0x60, 0, 0}, []byte{3, 2, 1, 0}, memory,
			[]byte{10, 8, 1, 6, 1, 0xA0, 0x8D, 0x06, 0x7F, 0x0B}),
		// a function touching a global that exists only once instrumented
		"added global": testdata(t, "hijack.wasm"),
	} {
		if _, err := wasm.Instrument(bin); !errors.Is(err, wasm.ErrUnsupportedModule) {
			t.Errorf("%s: err = %v, want ErrUnsupportedModule", name, err)
		}
	}
}

// cacheFiles lists the regular files under dir but manifests.
func cacheFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(d.Name(), "manifest") {
			files[p] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestCompileCacheTamperingIsDetected(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// pinned is this package's guest; abi_v2, of the same shape, the
	// conformance suite's.
	guest := map[string][]byte{"pinned": testdata(t, "pinned.wasm"), "abi_v2": backendtest.Guest(t, "abi_v2")}
	version := func(rt *wasm.Runtime, name string) uint32 {
		t.Helper()
		b, err := rt.Compile(ctx, name, guest[name], wasm.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(ctx)
		inst, err := b.NewInstance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close(ctx)
		v, err := inst.ABIVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	runtimeAt := func() (*wasm.Runtime, *testlog.Buffer) {
		logs := &testlog.Buffer{}
		rt, err := wasm.NewRuntime(dir, hclog.New(&hclog.LoggerOptions{Output: logs}))
		if err != nil {
			t.Fatal(err)
		}
		return rt, logs
	}

	// Compile the pinned module, then another one of the same shape.
	rt, _ := runtimeAt()
	if v := version(rt, "pinned"); v != 0x00010001 {
		t.Fatalf("pinned.wasm says ABI %#x, want 0x00010001", v)
	}
	pinned := cacheFiles(t, dir)
	if v := version(rt, "abi_v2"); v != 0x00020000 {
		t.Fatalf("abi_v2.wasm says ABI %#x, want 0x00020000", v)
	}
	rt.Close(ctx)
	var other []byte
	for f := range cacheFiles(t, dir) {
		if !pinned[f] {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			other = b
		}
	}
	if len(pinned) == 0 || other == nil {
		t.Fatalf("no cache entries found under %s", dir)
	}
	// Put the other module's code where the pinned module's is.
	for f := range pinned {
		if err := os.WriteFile(f, other, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	rt, logs := runtimeAt()
	defer rt.Close(ctx)
	if v := version(rt, "pinned"); v != 0x00010001 {
		t.Fatalf("after tampering with the cache, pinned.wasm ran code saying ABI %#x, want its own 0x00010001", v)
	}
	if got := rt.CacheRejected(); got != int64(len(pinned)) {
		t.Errorf("CacheRejected = %d, want %d", got, len(pinned))
	}
	if !strings.Contains(logs.String(), "discarded entries that do not match") {
		t.Errorf("the tampering was not logged; logs:\n%s", logs)
	}
	// And the recompiled entry is trusted again.
	rt2, _ := runtimeAt()
	defer rt2.Close(ctx)
	if v := version(rt2, "pinned"); v != 0x00010001 || rt2.CacheRejected() != 0 {
		t.Errorf("reloading after the repair: ABI %#x, %d rejected; want 0x00010001, 0", v, rt2.CacheRejected())
	}
}

func TestCompileCacheMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	rt, err := wasm.NewRuntime(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v, want 0700", st.Mode().Perm())
	}
}

func TestCompileCacheInADirectoryOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := wasm.NewRuntime(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	b, err := rt.Compile(ctx, "pinned", testdata(t, "pinned.wasm"), wasm.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close(ctx)
	// The cache went into a private directory of ours, not into dir itself.
	for f := range cacheFiles(t, dir) {
		if !strings.HasPrefix(f, filepath.Join(dir, "uid-0")+string(filepath.Separator)) {
			t.Errorf("cache file %s outside the private uid-0 directory", f)
		}
	}
	st, err := os.Stat(filepath.Join(dir, "uid-0"))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("private cache directory: %v, %v; want mode 0700", st, err)
	}
	if len(cacheFiles(t, dir)) == 0 {
		t.Error("nothing was cached")
	}
}
