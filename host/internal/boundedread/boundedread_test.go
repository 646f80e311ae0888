package boundedread

import (
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLimitRefusesPastTheLimitAndNotBefore(t *testing.T) {
	b, err := ReadAll(strings.NewReader("12345"), "-", 5, "a test")
	if err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	_, err = ReadAll(strings.NewReader("123456"), "-", 5, "a test")
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != "-: larger than 5 bytes, the limit for a test" {
		t.Fatalf("past the limit: %v", err)
	}
	// An endless reader is cut off after limit+1 bytes, not read forever.
	var zero countReader
	if _, err := ReadAll(&zero, "-", 1<<20, "a test"); !IsTooLarge(err) || zero.n > 1<<20+1 {
		t.Fatalf("endless: read %d, %v", zero.n, err)
	}
}

type countReader struct{ n int }

func (c *countReader) Read(p []byte) (int, error) { c.n += len(p); return len(p), nil }

func TestOpenChecksTheKindOfFile(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	if err := os.WriteFile(reg, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(reg, 5, Regular, "a test"); err != nil || string(b) != "hello" {
		t.Fatalf("regular: %q %v", b, err)
	}
	if _, err := ReadFile(reg, 4, Regular, "a test"); !IsTooLarge(err) {
		t.Fatalf("regular over the limit: %v", err)
	}
	for _, tc := range []struct {
		path  string
		kinds Kinds
		want  string
	}{
		{"/dev/zero", RegularOrPipe, "/dev/zero: is a character device, not a regular file or a pipe"},
		{fifo, Regular, fifo + ": is a pipe (FIFO), not a regular file"},
		{dir, Regular, dir + ": is a directory, not a file"},
	} {
		if _, err := ReadFile(tc.path, 1<<20, tc.kinds, "a test"); err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.path, err, tc.want)
		}
	}
	// A FIFO is accepted where pipes are, and opening it does not wait for
	// a writer; what is written arrives.
	done := make(chan string, 1)
	go func() {
		rc, err := Open(fifo, 1<<20, RegularOrPipe, "a test")
		if err != nil {
			done <- err.Error()
			return
		}
		defer rc.Close()
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			done <- err.Error()
			return
		}
		w.WriteString("data")
		w.Close()
		b, _ := io.ReadAll(rc)
		done <- string(b)
	}()
	select {
	case got := <-done:
		if got != "data" {
			t.Fatalf("fifo read %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
}

// Sum256 hashes within the limit and refuses what Open refuses; Check
// refuses the same without reading.
func TestSum256AndCheckAreBounded(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	if err := os.WriteFile(reg, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, n, err := Sum256(reg, 5, Regular, "a test")
	if err != nil || n != 5 || sum != sha256.Sum256([]byte("hello")) {
		t.Fatalf("Sum256 = %x, %d, %v", sum, n, err)
	}
	if err := Check(reg, 5, Regular, "a test"); err != nil {
		t.Fatalf("Check: %v", err)
	}
	for _, f := range []func(string, int64) error{
		func(p string, limit int64) error { _, _, err := Sum256(p, limit, Regular, "a test"); return err },
		func(p string, limit int64) error { return Check(p, limit, Regular, "a test") },
	} {
		if err := f(reg, 4); !IsTooLarge(err) {
			t.Errorf("over the limit: %v", err)
		}
		if err := f("/dev/zero", 1<<20); err == nil || !strings.Contains(err.Error(), "character device") {
			t.Errorf("/dev/zero: %v", err)
		}
		if err := f(fifo, 1<<20); err == nil || !strings.Contains(err.Error(), "pipe (FIFO)") {
			t.Errorf("fifo: %v", err)
		}
	}
}

// A pipe whose writer holds it open and never finishes is cut at the
// pipe deadline, naming it: the read waited for ever, so a --config FIFO
// swapped in under serve's reload or simulate --watch hung them.
func TestAStalledPipeIsCut(t *testing.T) {
	defer func(d time.Duration) { pipeTimeout = d }(pipeTimeout)
	pipeTimeout = 200 * time.Millisecond
	fifo := filepath.Join(t.TempDir(), "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A writer that holds the pipe open (O_RDWR does not wait for a
	// reader) and writes a little, then nothing.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("kind: "); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo, 1<<20, RegularOrPipe, "a test"); done <- err }()
	select {
	case err := <-done:
		var pt *PipeTimeoutError
		if !errors.As(err, &pt) || err.Error() != fifo+": the pipe did not reach its end within 200ms (a writer holds it open and stalls)" {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("reading a stalled pipe blocked")
	}
}

// A limit of MaxInt64 (a flag's largest value) reads like any other:
// asking for one byte more than allowed must not wrap.
func TestLimitOfMaxInt64Reads(t *testing.T) {
	got, err := ReadAll(strings.NewReader("whole"), "stdin", math.MaxInt64, "manifest")
	if err != nil || string(got) != "whole" {
		t.Fatalf("ReadAll with a limit of MaxInt64: %q, %v", got, err)
	}
}
