package watch

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
)

// Digest hashes a regular file and refuses, at once and naming it, what
// a watched path may be swapped for: a device (read without end before),
// a FIFO (waited on for ever before), a file past MaxDigestBytes.
func TestDigestIsBounded(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(reg, []byte("module"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sum, err := Digest(reg); err != nil || sum != sha256.Sum256([]byte("module")) {
		t.Fatalf("Digest(regular) = %x, %v", sum, err)
	}
	zero := filepath.Join(dir, "zero.wasm")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := specialfiles.FIFO(t, dir, "fifo.wasm")
	for _, tc := range []struct{ path, want string }{
		{zero, zero + ": is a character device, not a regular file"},
		{fifo, fifo + ": is a pipe (FIFO), not a regular file"},
		{specialfiles.Sparse(t, dir, "big.wasm", MaxDigestBytes+1), "larger than 64 MiB, the limit for a watched file"},
	} {
		err := specialfiles.Load(t, 20*time.Second, "digesting "+tc.path, func() error { _, err := Digest(tc.path); return err })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Digest(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}
