package pluginbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// A build describes what the host would load, no more.
func TestModuleLimitIsTheHosts(t *testing.T) {
	if maxModuleBytes != modules.MaxModuleBytes {
		t.Fatalf("maxModuleBytes %d, modules.MaxModuleBytes %d", maxModuleBytes, modules.MaxModuleBytes)
	}
}

// The files a build reads from the command line — the project's go.mod,
// the module -o names — are read within bounds: a device or FIFO is
// refused at once, naming it, instead of read for ever or waited on.
func TestBuildReadsItsFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := specialfiles.FIFO(t, dir, "m.fifo")
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: is a character device, not a regular file"},
		{fifo, fifo + ": is a pipe (FIFO), not a regular file"},
		{specialfiles.Sparse(t, dir, "big.wasm", maxModuleBytes+1), "larger than 64 MiB, the limit for a Wasm module"},
	} {
		err := specialfiles.Load(t, 20*time.Second, "describing "+tc.path, func() error { _, err := Describe(tc.path); return err })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Describe(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := specialfiles.FIFO(t, proj, "go.mod")
	err := specialfiles.Load(t, 20*time.Second, "building", func() error {
		_, err := Build(context.Background(), Options{Dir: proj, Toolchain: Go})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), gomod+": is a pipe (FIFO), not a regular file") {
		t.Errorf("Build with a FIFO go.mod = %v", err)
	}
	if _, err := Build(context.Background(), Options{Dir: dir, Toolchain: Go}); err == nil || !strings.Contains(err.Error(), "no go.mod") {
		t.Errorf("Build without go.mod = %v", err)
	}
}
