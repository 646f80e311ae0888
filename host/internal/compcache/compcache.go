// Package compcache keeps compiled Wasm code on disk so that it can be
// trusted: whoever can change an entry decides what a module executes,
// whatever the module's sha256 pin says, so an entry is bound to what it
// was compiled from and checked before use. host/platform/runtime/wasm (wazero) and
// host/platform/runtime/wasmtime share it.
package compcache

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// The on-disk compilation cache holds machine code that the runtime runs
// as it finds it. So the cache is bound to what it was compiled from and
// checked before use:
//
//   - the cache root is private: created 0700, and refused (the runtime
//     falls back to an in-memory cache) when another user owns it or can
//     write to it;
//   - each module compiles into a directory of its own, named by the
//     sha256 of what the runtime compiles, so an entry can only ever serve
//     that digest;
//   - after compiling, we record the sha256 of every file of that
//     directory in a manifest that also names the digest; before the next
//     use, every file must match the manifest. A file that does not match,
//     is not a regular file or is not recorded is removed before the
//     runtime reads the directory: it recompiles, and the rejection is
//     logged and counted (Runtime.CacheRejected of either backend).
//
// This defends against other users, stale or corrupted entries, and entries
// copied from elsewhere. A process running as our own user could also
// rewrite the manifest (or the wasmsched binary): that is out of scope.

// manifestName is the manifest file in each module's cache directory.
const manifestName = "wasmsched-manifest"

// Bounds of what is read from a cache directory: a manifest lists a
// few files; an entry is compiled code (ReadVerified's callers bound what
// they load with a limit of their own).
const (
	maxManifestBytes = 1 << 20
	maxEntryBytes    = 1 << 30
)

// manifestHeader starts a manifest; the digest follows it.
const manifestHeader = "wasmsched compilation cache v1 "

// PrivateDir creates dir (0700) and checks that only we can write to it,
// tightening its mode when we own it.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := checkOwner(st); err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
	}
	return nil
}

// Root picks a runtime's cache root under dir: dir itself when it can be
// made private to us, else a private subdirectory uid-<our uid> of it
// (dir may be a volume another user owns). When neither works it returns
// "" and dir's error: the caller then caches in memory only, since a
// cache others can write would let them choose the code a module runs.
func Root(dir string) (string, error) {
	err := PrivateDir(dir)
	if err == nil {
		return dir, nil
	}
	if sub := filepath.Join(dir, fmt.Sprintf("uid-%d", os.Getuid())); PrivateDir(sub) == nil {
		return sub, nil
	}
	return "", err
}

// manifestEntry is one file of a module's cache directory.
type manifestEntry struct{ path, sum string }

// readManifest reads dir's manifest; ok is false when there is none or it
// was written for another digest.
func readManifest(dir, digest string) (files map[string]string, ok bool) {
	f, err := boundedread.Open(filepath.Join(dir, manifestName), maxManifestBytes, boundedread.Regular, "a compile cache manifest")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text() != manifestHeader+digest {
		return nil, false
	}
	files = map[string]string{}
	for sc.Scan() {
		sum, path, found := strings.Cut(sc.Text(), "  ")
		if !found {
			return nil, false
		}
		files[path] = sum
	}
	return files, sc.Err() == nil
}

// cacheFiles lists the files of a module's cache directory (relative,
// slash-separated), the manifest excepted.
func cacheFiles(dir string) ([]string, []fs.DirEntry, error) {
	var paths []string
	var entries []fs.DirEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == manifestName {
			return nil
		}
		paths = append(paths, rel)
		entries = append(entries, d)
		return nil
	})
	return paths, entries, err
}

func fileSum(p string) (string, error) {
	sum, _, err := boundedread.Sum256(p, maxEntryBytes, boundedread.Regular, "a compile cache entry")
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// VerifyDir removes from a module's cache directory every file the
// manifest does not vouch for, and returns why each was rejected.
func VerifyDir(dir, digest string) (rejected []string, err error) {
	manifest, _ := readManifest(dir, digest)
	paths, entries, err := cacheFiles(dir)
	if err != nil {
		return nil, err
	}
	for i, rel := range paths {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		var why string
		switch want, listed := manifest[rel]; {
		case !entries[i].Type().IsRegular():
			why = "not a regular file"
		case !listed && strings.HasSuffix(rel, ".tmp"):
			// Entries are written to a temporary file renamed into
			// place; none is read, and another process may be writing
			// it now.
			continue
		case !listed:
			why = "not recorded when it was compiled"
		default:
			got, err := fileSum(full)
			if err != nil {
				why = fmt.Sprintf("unreadable: %v", err)
			} else if got != want {
				why = "content differs from what was compiled"
			}
		}
		if why == "" {
			continue
		}
		rejected = append(rejected, rel+": "+why)
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rejected, fmt.Errorf("remove rejected cache entry: %w", err)
		}
	}
	return rejected, nil
}

// SealDir records the files of a module's cache directory in its
// manifest (written to a temporary file and renamed into place).
func SealDir(dir, digest string) error {
	paths, entries, err := cacheFiles(dir)
	if err != nil {
		return err
	}
	var files []manifestEntry
	for i, rel := range paths {
		if !entries[i].Type().IsRegular() || strings.HasSuffix(rel, ".tmp") {
			continue
		}
		sum, err := fileSum(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		files = append(files, manifestEntry{rel, sum})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	var b strings.Builder
	b.WriteString(manifestHeader + digest + "\n")
	for _, f := range files {
		b.WriteString(f.sum + "  " + f.path + "\n")
	}
	return WriteFile(dir, manifestName, []byte(b.String()))
}

// WriteFile writes b as dir/name atomically: through a ".tmp" file (which
// SealDir leaves out) renamed into place, so a reader never sees half a
// file and a crash leaves no partial entry.
func WriteFile(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// ReadVerified returns the contents of a module's cache file (rel, a
// slash-separated path in dir) when the manifest vouches for exactly
// these bytes: it hashes what it read, so the bytes returned are the
// bytes checked (no window for the file to change in between). ok is
// false, with why, when the file is missing, unrecorded or altered;
// the caller compiles afresh (and should remove the file).
func ReadVerified(dir, digest, rel string, maxBytes int64) (b []byte, ok bool, why string) {
	manifest, _ := readManifest(dir, digest)
	want, listed := manifest[rel]
	full := filepath.Join(dir, filepath.FromSlash(rel))
	st, err := os.Lstat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, ""
	case err != nil:
		return nil, false, fmt.Sprintf("unreadable: %v", err)
	case !st.Mode().IsRegular():
		return nil, false, "not a regular file"
	case !listed:
		return nil, false, "not recorded when it was compiled"
	case st.Size() > maxBytes:
		return nil, false, fmt.Sprintf("%d bytes, over the %d a cache entry may have", st.Size(), maxBytes)
	}
	b, err = boundedread.ReadFile(full, maxBytes, boundedread.Regular, "a compile cache entry")
	switch {
	case boundedread.IsTooLarge(err):
		return nil, false, "content differs from what was compiled" // it grew since the Lstat
	case err != nil:
		return nil, false, fmt.Sprintf("unreadable: %v", err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != want {
		return nil, false, "content differs from what was compiled"
	}
	return b, true, ""
}
