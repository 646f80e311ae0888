package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
	"github.com/wasmsched/wasmsched/host/internal/compcache"
)

// DefaultCacheDir is where pulled modules are kept unless told otherwise:
// the user's cache directory, next to the compiled-code cache.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "wasmsched", "oci")
	}
	return filepath.Join(os.TempDir(), "wasmsched-oci")
}

// Cache is a content-addressed store of blobs (manifests, layers, the
// modules extracted from them) under DIR/blobs/sha256/HEX. A blob is
// written atomically (a temporary file renamed) and checked against its
// name every time it is read, so a corrupted or tampered cache entry is
// a miss, never a module that runs. Replicas may share the directory.
type Cache struct {
	dir string
}

// NewCache returns the cache in dir ("" caches nothing).
func NewCache(dir string) *Cache { return &Cache{dir: dir} }

func (c *Cache) path(d digest.Digest) (string, bool) {
	if c == nil || c.dir == "" || d.Validate() != nil || d.Algorithm() != digest.SHA256 {
		return "", false
	}
	return filepath.Join(c.dir, "blobs", "sha256", d.Encoded()), true
}

// Get returns the blob of digest d if the cache holds it intact (at most
// max bytes).
func (c *Cache) Get(d digest.Digest, max int64) ([]byte, bool) {
	p, ok := c.path(d)
	if !ok {
		return nil, false
	}
	b, err := boundedread.ReadFile(p, max, boundedread.Regular, "a cached blob")
	if err != nil {
		return nil, false
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != d.Encoded() {
		return nil, false
	}
	return b, true
}

// Put stores b under its sha256 (which the caller has verified).
func (c *Cache) Put(b []byte) error {
	sum := sha256.Sum256(b)
	p, ok := c.path(digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(sum[:])))
	if !ok {
		return nil
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("module cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("module cache: %w", err)
	}
	if err := compcache.WriteFile(filepath.Dir(p), filepath.Base(p), b); err != nil {
		return fmt.Errorf("module cache: %w", err)
	}
	return nil
}
