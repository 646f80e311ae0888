package modules

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/config"
)

// A module path must be a regular file of bounded size: /dev/zero was read
// until memory ran out, and a FIFO blocked the load forever.
func TestModulePathMustBeABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "m.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.wasm")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is what counts, not the blocks.
	if err := f.Truncate(MaxModuleBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct{ name, path, want string }{
		{"device", "/dev/zero", "modules[0].path: /dev/zero: is a character device, not a regular file"},
		{"fifo", fifo, "modules[0].path: " + fifo + ": is a pipe (FIFO), not a regular file"},
		{"directory", dir, "modules[0].path: " + dir + ": is a directory"},
		{"too large", big, "larger than 64 MiB, the limit for a Wasm module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := load(t, config.Module{Name: "m", Path: tc.path})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("loading the module blocked")
			}
		})
	}
}
