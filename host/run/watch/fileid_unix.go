//go:build unix

package watch

import (
	"io/fs"
	"syscall"
)

// fileID returns the device and inode of a file, which change when a file is
// replaced by rename even if its size and mtime happen to match.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Dev), uint64(st.Ino) // field types differ by platform
}
