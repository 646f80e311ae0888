// Package boundedread reads the files wasmsched is given — configuration,
// manifests, Wasm modules, standard input — without letting one of them
// hang the process or exhaust its memory: a path must name a regular file
// (or, where a caller allows it, a pipe), is opened without blocking (so a
// FIFO nobody writes to cannot stall the open), is refused once it
// passes a size limit, whatever its stat says (files in /proc report 0),
// and, for a pipe, must reach its end within a time limit (a writer that
// holds it open and stalls cannot stall the read either).
//
// It is the only code in host/ and cmd/ that opens a file to read it:
// TestEveryFileReadIsBounded fails on an os.ReadFile, os.Open,
// os.OpenFile or ioutil read anywhere else, so a path that comes from the
// configuration or the command line cannot be read some other way.
package boundedread

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// TooLargeError says an input passed its limit. Name is the file ("-" for
// standard input) and What the kind of input, for the message.
type TooLargeError struct {
	Name  string
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s, the limit for %s", e.Name, Size(e.Limit), e.What)
}

// Size writes a byte count the way the limits are documented ("64 MiB").
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Kinds of file a caller accepts besides regular files.
type Kinds int

const (
	// Regular accepts regular files only (Wasm modules: their content is
	// hashed and compiled, so it must be a stable file).
	Regular Kinds = iota
	// RegularOrPipe also accepts pipes, so `--config <(generate)` and
	// process substitution work; devices, sockets and directories are
	// still refused.
	RegularOrPipe
)

// pipeTimeout bounds reading a pipe, from opening it to its end: a writer
// that holds it open and stalls would otherwise keep a load (and every
// --watch re-run or serve reload after it) waiting for ever. Process
// substitution (`--config <(generate)`) writes well within it. A variable
// for the tests.
var pipeTimeout = time.Minute

// PipeTimeoutError says a pipe did not reach its end in time.
type PipeTimeoutError struct {
	Name    string
	Timeout time.Duration
}

func (e *PipeTimeoutError) Error() string {
	return fmt.Sprintf("%s: the pipe did not reach its end within %s (a writer holds it open and stalls)", e.Name, e.Timeout)
}

// Open opens path for reading after checking, on the opened descriptor
// (no race with a rename), that it is a kind of file the caller accepts.
// The returned reader fails with *TooLargeError once more than limit
// bytes have been read.
func Open(path string, limit int64, kinds Kinds, what string) (io.ReadCloser, error) {
	// O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer,
	// forever if none comes. It changes nothing for regular files.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := checkMode(path, st.Mode(), kinds); err != nil {
		f.Close()
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() > limit {
		f.Close()
		return nil, &TooLargeError{Name: path, What: what, Limit: limit}
	}
	lf := &limitedFile{f: f, r: Limit(f, path, limit, what)}
	if st.Mode()&fs.ModeNamedPipe != 0 {
		// Opened non-blocking, the pipe is polled, so a deadline
		// applies to it.
		if err := f.SetReadDeadline(time.Now().Add(pipeTimeout)); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: bound the time to read the pipe: %w", path, err)
		}
		lf.timeout = &PipeTimeoutError{Name: path, Timeout: pipeTimeout}
	}
	return lf, nil
}

func checkMode(path string, m fs.FileMode, kinds Kinds) error {
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeNamedPipe != 0 && kinds == RegularOrPipe:
		return nil
	case m.IsDir():
		return fmt.Errorf("%s: is a directory, not a file", path)
	}
	want := "a regular file"
	if kinds == RegularOrPipe {
		want = "a regular file or a pipe"
	}
	return fmt.Errorf("%s: is a %s, not %s", path, kindName(m), want)
}

func kindName(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeNamedPipe != 0:
		return "pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

type limitedFile struct {
	f       *os.File
	r       io.Reader
	timeout *PipeTimeoutError // set for a pipe
}

func (l *limitedFile) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.timeout != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = l.timeout
	}
	return n, err
}
func (l *limitedFile) Close() error { return l.f.Close() }

// ReadFile reads a whole file within limit (see Open).
func ReadFile(path string, limit int64, kinds Kinds, what string) ([]byte, error) {
	rc, err := Open(path, limit, kinds, what)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Sum256 hashes a whole file within limit (see Open) without holding it
// in memory, and returns its digest and size: for files that are compared
// or described rather than parsed (a watched file's content, a built
// module, a cache entry).
func Sum256(path string, limit int64, kinds Kinds, what string) (sum [sha256.Size]byte, size int64, err error) {
	rc, err := Open(path, limit, kinds, what)
	if err != nil {
		return sum, 0, err
	}
	defer rc.Close()
	h := sha256.New()
	if size, err = io.Copy(h, rc); err != nil {
		return sum, 0, err
	}
	h.Sum(sum[:0])
	return sum, size, nil
}

// Check opens path as Open does and closes it without reading: for a file
// that a library reads itself (client-go reads the kubeconfig), so that a
// device, a FIFO or a huge file is refused, naming it, before the library
// reads it without a bound or waits on it forever. The file can still be
// replaced between the check and the library's read; the check is for
// mistakes and hostile paths, not for a race with our own user.
func Check(path string, limit int64, kinds Kinds, what string) error {
	rc, err := Open(path, limit, kinds, what)
	if err != nil {
		return err
	}
	return rc.Close()
}

// ReadAll reads r (standard input, say) whole within limit.
func ReadAll(r io.Reader, name string, limit int64, what string) ([]byte, error) {
	return io.ReadAll(Limit(r, name, limit, what))
}

// Limit wraps r so that reading more than limit bytes fails with
// *TooLargeError instead of quietly stopping, as io.LimitReader would: a
// truncated manifest or module must not pass for a whole one.
func Limit(r io.Reader, name string, limit int64, what string) io.Reader {
	return &limiter{r: r, left: limit, err: &TooLargeError{Name: name, What: what, Limit: limit}}
}

type limiter struct {
	r    io.Reader
	left int64 // bytes still allowed
	err  *TooLargeError
}

func (l *limiter) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, l.err
	}
	// Ask for one byte more than allowed, to tell "exactly at the limit"
	// from "past it".
	if int64(len(p)) > l.left { // not l.left+1, which wraps at MaxInt64
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n - int(-l.left), l.err
	}
	return n, err
}

// IsTooLarge reports whether err is (or wraps) a *TooLargeError.
func IsTooLarge(err error) bool {
	var t *TooLargeError
	return errors.As(err, &t)
}
