package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSymlinkHops bounds symlink resolution so a link loop ends with an error
// instead of spinning; it matches the usual kernel limit (ELOOP after 40).
const maxSymlinkHops = 40

// errSymlinkLoop reports that resolving a path passed through too many
// symlinks, most likely a loop.
var errSymlinkLoop = errors.New("too many levels of symbolic links")

// fingerprint is what we compare to decide whether a path changed. It is
// comparable with == on purpose: equality is the whole test.
type fingerprint struct {
	// real is the path with every symlink resolved; it changes on a
	// ConfigMap swap even when the new content is the same size.
	real string
	// exists is false when the path (or a link in its chain) is missing.
	exists bool
	// dev and ino identify the file; a rename replacement changes them.
	dev, ino uint64
	// size and mtime catch writes in place.
	size  int64
	mtime int64
	// problem records why resolution stopped (loop, permission), so a
	// change in the error is also a change.
	problem string
}

// resolution is the outcome of following one path: its fingerprint and the
// directories whose events could change it.
type resolution struct {
	fp   fingerprint
	dirs []string
}

// resolve follows path (absolute and clean) one component at a time, the
// way the kernel does, and records the directory holding every symlink it
// passes plus the directory holding the final file. When a component is
// missing it records the directory where that component would appear, so its
// creation is seen.
func resolve(path string) resolution {
	var res resolution
	vol := filepath.VolumeName(path)
	resolved := vol + string(filepath.Separator)
	rest := splitPath(path[len(vol):])
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case ".":
			continue
		case "..":
			// resolved has no symlinks left, so its parent is the
			// physical parent, which is what the kernel uses.
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil {
			res.dirs = append(res.dirs, resolved)
			res.fp = missing(next, err)
			return res
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		// A symlink: its own directory decides where it points, so a
		// rename over it (..data_tmp -> ..data) is an event there.
		res.dirs = append(res.dirs, resolved)
		hops++
		if hops > maxSymlinkHops {
			res.fp = missing(next, errSymlinkLoop)
			return res
		}
		target, err := os.Readlink(next)
		if err != nil {
			res.fp = missing(next, err)
			return res
		}
		if filepath.IsAbs(target) {
			tvol := filepath.VolumeName(target)
			resolved = tvol + string(filepath.Separator)
			target = target[len(tvol):]
		}
		rest = append(splitPath(target), rest...)
	}
	res.dirs = append(res.dirs, filepath.Dir(resolved))
	fi, err := os.Lstat(resolved)
	if err != nil {
		res.fp = missing(resolved, err)
		return res
	}
	res.fp = statFingerprint(resolved, fi)
	return res
}

// missing is the fingerprint of a path that cannot be resolved to a file.
// A plain "does not exist" leaves problem empty so that the same absence
// reached through a different link does not look like a change.
func missing(at string, err error) fingerprint {
	fp := fingerprint{}
	if !errors.Is(err, fs.ErrNotExist) {
		fp.problem = fmt.Sprintf("%s: %v", at, err)
	}
	return fp
}

// statFingerprint builds the fingerprint of an existing, fully resolved file.
func statFingerprint(real string, fi fs.FileInfo) fingerprint {
	dev, ino := fileID(fi)
	return fingerprint{
		real:   real,
		exists: true,
		dev:    dev,
		ino:    ino,
		size:   fi.Size(),
		mtime:  fi.ModTime().UnixNano(),
	}
}

// splitPath splits a path into its non-empty components.
func splitPath(p string) []string {
	parts := strings.Split(p, string(filepath.Separator))
	out := parts[:0]
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
