package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testwait"
)

const (
	// testDebounce is short to keep the suite fast but long enough that
	// the events of one file operation land in one window.
	testDebounce = 100 * time.Millisecond
	// quiet is how long we wait to be sure no signal is due.
	quiet = 3 * testDebounce
	// signalTimeout is generous: under -race on a loaded machine a check
	// can be late, and a missing signal is still caught.
	signalTimeout = 5 * time.Second
)

// newTestWatcher starts a Watcher that logs into the returned buffer and is
// closed when the test ends. It checks that New itself does not signal.
func newTestWatcher(t *testing.T, paths ...string) (*Watcher, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	log := hclog.New(&hclog.LoggerOptions{Name: "watch", Output: logs, Level: hclog.Trace})
	w, err := New(paths, testDebounce, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("watcher log:\n%s", logs.String())
		}
	})
	return w, logs
}

func expectSignal(t *testing.T, w *Watcher, what string) {
	t.Helper()
	select {
	case <-w.Changes():
	case <-time.After(signalTimeout):
		t.Fatalf("%s: no change signalled within %s", what, signalTimeout)
	}
}

func expectNoSignal(t *testing.T, w *Watcher, what string) {
	t.Helper()
	select {
	case <-w.Changes():
		t.Fatalf("%s: unexpected change signal", what)
	case <-time.After(quiet):
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// atomicWrite updates a ConfigMap-style volume the way the kubelet's
// AtomicWriter does: payload goes into a fresh timestamped directory, a
// ..data_tmp symlink to it is renamed over ..data, user-visible symlinks
// name -> ..data/name are created if missing, and the old timestamped
// directory is removed. The visible files never get a write event.
func atomicWrite(t *testing.T, dir string, payload map[string]string) {
	t.Helper()
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range payload {
		writeFile(t, filepath.Join(tsDir, name), content)
	}
	dataLink := filepath.Join(dir, "..data")
	oldTs, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		t.Fatal(err)
	}
	for name := range payload {
		visible := filepath.Join(dir, name)
		if _, err := os.Lstat(visible); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", name), visible); err != nil {
				t.Fatal(err)
			}
		}
	}
	if oldTs != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTs)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	atomicWrite(t, dir, map[string]string{"config.yaml": "v: 1\n", "policy.wasm": "module-1"})
	cfg := filepath.Join(dir, "config.yaml")
	mod := filepath.Join(dir, "policy.wasm")
	w, _ := newTestWatcher(t, cfg, mod)
	expectNoSignal(t, w, "after New")

	atomicWrite(t, dir, map[string]string{"config.yaml": "v: 2\n", "policy.wasm": "module-1"})
	expectSignal(t, w, "first swap")
	expectNoSignal(t, w, "after first swap")
	if got, err := os.ReadFile(cfg); err != nil || string(got) != "v: 2\n" {
		t.Fatalf("config after swap = %q, %v", got, err)
	}

	// The watches must have followed ..data to the new timestamped
	// directory and dropped the deleted one.
	data, err := filepath.EvalSymlinks(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	list := w.fw.WatchList()
	if !slices.Contains(list, data) {
		t.Fatalf("watch list %v lacks the current data dir %s", list, data)
	}
	if len(list) != 2 {
		t.Fatalf("watch list %v: want the mount dir and the current data dir only", list)
	}

	// A second swap changing only the module file is seen as well.
	atomicWrite(t, dir, map[string]string{"config.yaml": "v: 2\n", "policy.wasm": "module-2"})
	expectSignal(t, w, "second swap")
	expectNoSignal(t, w, "after second swap")
}

func TestInPlaceWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "a")
	w, _ := newTestWatcher(t, p)

	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("bc"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	expectSignal(t, w, "in-place write")
	expectNoSignal(t, w, "after in-place write")
}

func TestRenameReplacement(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "old")
	w, _ := newTestWatcher(t, p)

	tmp := filepath.Join(dir, ".config.yaml.swp")
	writeFile(t, tmp, "new")
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	expectSignal(t, w, "rename over")
	expectNoSignal(t, w, "after rename over")

	// The replacement is watched too.
	writeFile(t, p, "newer")
	expectSignal(t, w, "write after rename")
}

func TestDeleteAndRecreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "one")
	w, _ := newTestWatcher(t, p)

	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "two")
	expectSignal(t, w, "delete and recreate")
	expectNoSignal(t, w, "after delete and recreate")

	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	expectSignal(t, w, "delete alone")
	writeFile(t, p, "three")
	expectSignal(t, w, "recreate after a quiet gap")
}

func TestPathAppearsAfterNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "later.yaml")
	w, _ := newTestWatcher(t, p)
	expectNoSignal(t, w, "missing file")

	writeFile(t, p, "here")
	expectSignal(t, w, "file created")
}

func TestUnrelatedFileDoesNotSignal(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "cfg")
	w, logs := newTestWatcher(t, p)

	other := filepath.Join(dir, "other.log")
	for i := range 5 {
		writeFile(t, other, fmt.Sprint("line ", i))
	}
	if err := os.Rename(other, other+".1"); err != nil {
		t.Fatal(err)
	}
	expectNoSignal(t, w, "unrelated file")
	if !strings.Contains(logs.String(), "other.log") {
		t.Fatalf("events for other.log never reached the watcher; the no-signal check proved nothing")
	}

	writeFile(t, p, "cfg2")
	expectSignal(t, w, "watched file after unrelated noise")
}

func TestBurstCoalesces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "0")
	w, _ := newTestWatcher(t, p)

	// Count signals while the burst runs, so a watcher that signalled per
	// event could not hide behind the one-slot channel.
	stop := make(chan struct{})
	count := make(chan int)
	first := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-w.Changes():
				if n++; n == 1 {
					close(first)
				}
			case <-stop:
				count <- n
				return
			}
		}
	}()
	for i := range 20 {
		writeFile(t, p, strings.Repeat("x", i+1))
		// Separate writes spread over a few debounce-short gaps: the
		// pause is the burst's shape, not ordering.
		time.Sleep(2 * time.Millisecond)
	}
	// Wait for the trailing-edge signal, then a quiet window for extras
	// (only time can show that no further signal comes).
	select {
	case <-first:
		time.Sleep(quiet)
	case <-time.After(signalTimeout):
	}
	close(stop)
	if n := <-count; n < 1 || n > 2 {
		t.Fatalf("burst of 20 writes gave %d signals, want 1 (at most 2)", n)
	}
}

func TestContinuousStreamSignalsBeforeItEnds(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "0")
	w, _ := newTestWatcher(t, p)

	// Writes every quarter debounce never leave a quiet window; without
	// the cap the signal would wait for the stream to end.
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(testDebounce / 4)
		defer tick.Stop()
		for i := 1; ; i++ {
			if err := os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	select {
	case <-w.Changes():
		t.Logf("signalled %s into the stream (cap %s)", time.Since(start), maxWaitFactor*testDebounce)
	case <-time.After(30 * testDebounce):
		t.Errorf("no signal during a %s stream of writes", 30*testDebounce)
	}
	close(stop)
	<-stopped
}

func TestSetPathsMovesToAnotherDir(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	a := filepath.Join(dir1, "a.yaml")
	b := filepath.Join(dir2, "b.wasm")
	writeFile(t, a, "a")
	writeFile(t, b, "b")
	w, _ := newTestWatcher(t, a)

	if err := w.SetPaths([]string{b}); err != nil {
		t.Fatalf("SetPaths: %v", err)
	}
	expectNoSignal(t, w, "SetPaths itself")
	if list := w.fw.WatchList(); !slices.Equal(list, []string{dir2}) {
		t.Fatalf("watch list after SetPaths = %v, want [%s]", list, dir2)
	}
	writeFile(t, a, "a2")
	expectNoSignal(t, w, "old path after SetPaths")
	writeFile(t, b, "b2")
	expectSignal(t, w, "new path after SetPaths")
}

func TestSetPathsKeepsBaselineOfKeptPaths(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.wasm")
	writeFile(t, a, "a")
	writeFile(t, b, "b")
	w, _ := newTestWatcher(t, a)

	// a changes, and before the debounce window ends the reloader
	// retargets to a and b: the change to a must still be reported.
	writeFile(t, a, "a2")
	if err := w.SetPaths([]string{a, b}); err != nil {
		t.Fatalf("SetPaths: %v", err)
	}
	expectSignal(t, w, "change to a kept path")
	expectNoSignal(t, w, "after SetPaths")
}

func TestSetPathsRejectsMissingDir(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	writeFile(t, a, "a")
	w, _ := newTestWatcher(t, a)

	err := w.SetPaths([]string{filepath.Join(dir, "nope", "b.yaml")})
	if err == nil {
		t.Fatal("SetPaths with a missing directory succeeded")
	}
	writeFile(t, a, "a2")
	expectSignal(t, w, "old path still watched after a failed SetPaths")
}

func TestNewRejectsMissingDir(t *testing.T) {
	_, err := New([]string{filepath.Join(t.TempDir(), "nope", "x.yaml")}, testDebounce, nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("New with a missing directory: err = %v, want ErrNotExist", err)
	}
	if _, err := New(nil, -time.Second, nil); err == nil {
		t.Fatal("New with a negative debounce succeeded")
	}
}

func TestSymlinkHopInAnotherDir(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	real1 := filepath.Join(dir2, "real.yaml")
	writeFile(t, real1, "1")
	link := filepath.Join(dir1, "config.yaml")
	if err := os.Symlink(real1, link); err != nil {
		t.Fatal(err)
	}
	w, _ := newTestWatcher(t, link)

	// Replace the target in its own directory: only a watch on dir2 sees it.
	tmp := filepath.Join(dir2, "real.yaml.tmp")
	writeFile(t, tmp, "2")
	if err := os.Rename(tmp, real1); err != nil {
		t.Fatal(err)
	}
	expectSignal(t, w, "target replaced")

	// Retarget the link itself to another file of the same content.
	real2 := filepath.Join(dir2, "other.yaml")
	writeFile(t, real2, "2")
	tmpLink := filepath.Join(dir1, "config.yaml.tmp")
	if err := os.Symlink(real2, tmpLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmpLink, link); err != nil {
		t.Fatal(err)
	}
	expectSignal(t, w, "link retargeted")
	expectNoSignal(t, w, "after retarget")
}

func TestSymlinkLoopDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	b := filepath.Join(dir, "b")
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	if r := resolve(a); r.fp.exists || !strings.Contains(r.fp.problem, "too many levels") {
		t.Fatalf("resolve of a loop = %+v", r.fp)
	}
	w, _ := newTestWatcher(t, a)
	// Breaking the loop into a real file is a change.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	writeFile(t, b, "now real")
	expectSignal(t, w, "loop broken")
}

func TestFsnotifyErrorIsLoggedAndSurvived(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "1")
	w, logs := newTestWatcher(t, p)

	// The real fsnotify watcher delivers errors on this channel; sending
	// one ourselves exercises the same path.
	w.fw.Errors <- errors.New("injected failure")
	testwait.Eventually(t, signalTimeout, func() bool { return strings.Contains(logs.String(), "injected failure") },
		"fsnotify error was not logged")
	// An error only triggers a recheck; nothing changed, so no signal.
	expectNoSignal(t, w, "after error")
	writeFile(t, p, "2")
	expectSignal(t, w, "write after error")
}

func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	writeFile(t, p, "1")
	w, err := New([]string{p}, testDebounce, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "2")
	expectSignal(t, w, "before Close")

	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.SetPaths([]string{p}); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetPaths after Close: err = %v, want ErrClosed", err)
	}
	writeFile(t, p, "3")
	expectNoSignal(t, w, "after Close")

	if !testwait.Within(signalTimeout, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before New, %d after Close\n%s",
			before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

func TestResolveRecordsEveryHop(t *testing.T) {
	// root/mount/config.yaml -> ..data/config.yaml, ..data -> ..ts,
	// the ConfigMap layout reached through a symlinked mount dir.
	root := t.TempDir()
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	realMount := filepath.Join(root, "real-mount")
	if err := os.Mkdir(realMount, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real-mount", filepath.Join(root, "mount")); err != nil {
		t.Fatal(err)
	}
	atomicWrite(t, realMount, map[string]string{"config.yaml": "x"})
	ts, err := os.Readlink(filepath.Join(realMount, "..data"))
	if err != nil {
		t.Fatal(err)
	}

	r := resolve(filepath.Join(root, "mount", "config.yaml"))
	wantReal := filepath.Join(realMount, ts, "config.yaml")
	if !r.fp.exists || r.fp.real != wantReal {
		t.Fatalf("resolved to %+v, want real path %s", r.fp, wantReal)
	}
	// root holds the mount link, realMount holds config.yaml and ..data,
	// the timestamped dir holds the file.
	want := []string{root, realMount, realMount, filepath.Join(realMount, ts)}
	if !slices.Equal(r.dirs, want) {
		t.Fatalf("dirs = %v, want %v", r.dirs, want)
	}
}
