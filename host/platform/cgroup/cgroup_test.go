package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMemoryLimit: v2's memory.max wins, v1's file is read when v2's is
// absent, "max" and v1's huge value mean none, and a file that is not a
// byte count, a FIFO or an oversized file is an error naming the path.
func TestMemoryLimit(t *testing.T) {
	write := func(t *testing.T, root, name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, v2, v1 string
		want         int64
		wantErr      string
	}{
		{name: "none", want: 0},
		{name: "v2", v2: "268435456\n", v1: "1", want: 256 << 20},
		{name: "v2 max", v2: "max\n", want: 0},
		{name: "v1", v1: "134217728\n", want: 128 << 20},
		{name: "v1 unlimited", v1: "9223372036854771712\n", want: 0},
		{name: "not a number", v2: "lots\n", wantErr: "is not a byte count"},
		{name: "too large", v2: strings.Repeat("1", maxFileBytes+1), wantErr: "cgroup memory limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.v2 != "" {
				write(t, root, "memory.max", tc.v2)
			}
			if tc.v1 != "" {
				write(t, root, filepath.Join("memory", "memory.limit_in_bytes"), tc.v1)
			}
			got, err := MemoryLimit(root)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("MemoryLimit = %d, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("MemoryLimit = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	t.Run("fifo", func(t *testing.T) {
		root := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(root, "memory.max"), 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		if got, err := MemoryLimit(root); err == nil {
			t.Fatalf("MemoryLimit of a FIFO = %d, nil; want an error", got)
		}
	})
}
