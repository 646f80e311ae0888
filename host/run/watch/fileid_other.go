//go:build !unix

package watch

import "io/fs"

// fileID has no portable inode outside unix; the real path, size and mtime
// still catch replacements there.
func fileID(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
