// Package cgroup reads what the process's control group allows it, for
// settings that follow the container's limits (serve --memory-limit
// auto) rather than the machine's.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// maxFileBytes bounds a cgroup file read: a limit is one short line, and
// anything longer is not a cgroup file.
const maxFileBytes = 4096

// MemoryLimit reads the memory limit of the process's cgroup under
// root: cgroup v2's memory.max, else v1's memory.limit_in_bytes; 0 when
// there is none ("max", a v1 value of 2^62 or more, no such file).
func MemoryLimit(root string) (int64, error) {
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := boundedread.ReadFile(filepath.Join(root, f), maxFileBytes, boundedread.Regular, "cgroup memory limit")
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read the container's memory limit: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read the container's memory limit: %s: %q is not a byte count", filepath.Join(root, f), s)
		}
		if n >= 1<<62 { // cgroup v1's "unlimited"
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}
