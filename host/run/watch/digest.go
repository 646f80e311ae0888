package watch

import (
	"crypto/sha256"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// MaxDigestBytes bounds the files Digest reads: the largest input a
// watched path can name (a Wasm module: host/platform/modules' MaxModuleBytes; the
// configuration and manifest limits are smaller). A larger file would be
// refused by its loader anyway.
const MaxDigestBytes = 64 << 20

// Digest is the sha256 of a watched file's content, for telling which of
// the watched files an event was about (the fingerprints say only that
// one may have changed). The path must name a regular file within
// MaxDigestBytes: a module swapped for a /dev/zero symlink is refused at
// once instead of read without end, and a FIFO is refused instead of
// waited on (reading a pipe would also take its bytes from the loader).
// The error names the file and why.
func Digest(path string) ([sha256.Size]byte, error) {
	sum, _, err := boundedread.Sum256(path, MaxDigestBytes, boundedread.Regular, "a watched file")
	return sum, err
}
