package modules

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
)

// A module path must be a regular file of bounded size: /dev/zero was read
// until memory ran out, and a FIFO blocked the load forever.
func TestModulePathMustBeABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := specialfiles.FIFO(t, dir, "m.fifo")
	big := specialfiles.Sparse(t, dir, "big.wasm", MaxModuleBytes+1)
	for _, tc := range []struct{ name, path, want string }{
		{"device", "/dev/zero", "modules[0].path: /dev/zero: is a character device, not a regular file"},
		{"fifo", fifo, "modules[0].path: " + fifo + ": is a pipe (FIFO), not a regular file"},
		{"directory", dir, "modules[0].path: " + dir + ": is a directory"},
		{"too large", big, "larger than 64 MiB, the limit for a Wasm module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := specialfiles.Load(t, 20*time.Second, "loading the module", func() error {
				_, err := load(t, config.ModuleSpec{Name: "m", Path: tc.path})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
