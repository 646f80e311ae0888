package compcache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
)

// TestReadVerifiedReturnsOnlyVouchedBytes: an entry is returned only when
// the manifest written at sealing vouches for exactly its bytes.
func TestReadVerifiedReturnsOnlyVouchedBytes(t *testing.T) {
	const digest = "d1"
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("module.cwasm", "machine code")
	if err := SealDir(dir, digest); err != nil {
		t.Fatal(err)
	}
	if b, ok, why := ReadVerified(dir, digest, "module.cwasm", 1<<20); !ok || string(b) != "machine code" {
		t.Fatalf("sealed entry: %q, %v, %q; want its bytes", b, ok, why)
	}
	if _, ok, why := ReadVerified(dir, "another digest", "module.cwasm", 1<<20); ok || why != "not recorded when it was compiled" {
		t.Errorf("entry under another digest's manifest: ok %v, %q", ok, why)
	}
	if _, ok, why := ReadVerified(dir, digest, "module.cwasm", 4); ok || !strings.Contains(why, "over the 4") {
		t.Errorf("entry over the size bound: ok %v, %q", ok, why)
	}
	if _, ok, why := ReadVerified(dir, digest, "missing.cwasm", 1<<20); ok || why != "" {
		t.Errorf("missing entry: ok %v, %q; want a quiet miss", ok, why)
	}
	write("module.cwasm", "evil code!!!")
	if _, ok, why := ReadVerified(dir, digest, "module.cwasm", 1<<20); ok || why != "content differs from what was compiled" {
		t.Errorf("altered entry: ok %v, %q", ok, why)
	}
	os.Remove(filepath.Join(dir, "module.cwasm"))
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "module.cwasm")); err != nil {
		t.Fatal(err)
	}
	if _, ok, why := ReadVerified(dir, digest, "module.cwasm", 1<<20); ok || why != "not a regular file" {
		t.Errorf("symlinked entry: ok %v, %q", ok, why)
	}
}

// TestVerifyDirRemovesWhatTheManifestDoesNotVouchFor.
func TestVerifyDirRemovesWhatTheManifestDoesNotVouchFor(t *testing.T) {
	const digest = "d2"
	dir := t.TempDir()
	for name, content := range map[string]string{"a": "kept", "b": "altered later"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := SealDir(dir, digest); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "b"), []byte("altered"), 0o600)
	os.WriteFile(filepath.Join(dir, "c"), []byte("unrecorded"), 0o600)
	rejected, err := VerifyDir(dir, digest)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rejected, "; ")
	if len(rejected) != 2 || !strings.Contains(got, "b: content differs") || !strings.Contains(got, "c: not recorded") {
		t.Errorf("rejected %q, want b altered and c unrecorded", got)
	}
	for name, want := range map[string]bool{"a": true, "b": false, "c": false} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s present: %v, want %v", name, err == nil, want)
		}
	}
}

// A cache directory whose manifest is a FIFO (only our own user can put
// one there, but the directory comes from --wasm-cache-dir) is treated
// as unsealed, at once: opening it must not wait for a writer for ever.
func TestAFIFOManifestDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "entry"), []byte("code"), 0o600); err != nil {
		t.Fatal(err)
	}
	specialfiles.FIFO(t, dir, manifestName)
	err := specialfiles.Load(t, 20*time.Second, "verifying the cache directory", func() error {
		rejected, err := VerifyDir(dir, "d3")
		if err == nil && (len(rejected) != 1 || rejected[0] != "entry: not recorded when it was compiled") {
			t.Errorf("rejected %v", rejected)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
