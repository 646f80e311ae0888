//go:build unix

package compcache

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a cache directory another user owns: they could
// replace its entries whatever its mode.
func checkOwner(st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(sys.Uid) != uid {
		return fmt.Errorf("owned by uid %d, not by this process's uid %d", sys.Uid, uid)
	}
	return nil
}
