package reload_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wasmsched/wasmsched/host/run/reload"
)

// serve's reload reads a module swapped for a /dev/zero symlink or a FIFO
// as the first load does (host/platform/modules reads through boundedread): it is
// refused at once with an error naming the file and what it is, and the
// running policy keeps serving.
func TestReloadRefusesSpecialModuleFiles(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		make       func(path string) error
	}{
		{"/dev/zero symlink", "is a character device, not a regular file", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"FIFO", "is a pipe (FIFO), not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, policyConfig("LeastAllocated", ""))
			if got := e.schedule(""); got != "empty" {
				t.Fatalf("first pod went to %s", got)
			}
			mod := filepath.Join(e.dir, "m.wasm")
			if err := tc.make(mod); err != nil {
				t.Fatal(err)
			}
			e.write("config.yaml", policyConfig("MostAllocated", "modules:\n- name: m\n  path: m.wasm\n"))
			res, err := e.r.Reload(context.Background())
			if res != reload.Refused || err == nil || !strings.Contains(err.Error(), "modules[0].path: "+mod+": "+tc.want) {
				t.Fatalf("Reload = %v, %v; want refused naming %s", res, err, mod)
			}
			if got := e.schedule(""); got != "empty" {
				t.Fatalf("after the refusal a pod went to %s, want empty (LeastAllocated still serving)", got)
			}
		})
	}
}
