package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// maxWaitFactor caps how long a continuous burst can postpone the check:
// no later than maxWaitFactor×debounce after the burst's first event, so a
// file that is rewritten forever still gets reloaded.
const maxWaitFactor = 4

// maxResolveRounds bounds how often one check re-resolves after adding
// watches. A second round closes the gap between resolving a path and
// watching the directory it now runs through; more rounds only matter while
// the chain keeps moving, and the next event covers that.
const maxResolveRounds = 3

// ErrClosed is returned by SetPaths after Close, so a reloader racing with
// shutdown gets a clear error rather than a silent no-op.
var ErrClosed = errors.New("watch: watcher closed")

// Watcher signals on Changes when any of its paths may have changed. It is
// safe for concurrent use. See the package documentation for how it decides.
type Watcher struct {
	log      hclog.Logger
	debounce time.Duration
	fw       *fsnotify.Watcher
	changes  chan struct{}

	kick      chan struct{} // buffered(1): "something happened, look again"
	stop      chan struct{} // closed by Close to end debounceLoop
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu     sync.Mutex
	closed bool
	paths  []string               // absolute, clean, no duplicates
	prints map[string]fingerprint // last fingerprint seen per path
}

// New watches paths (files; they may be symlinks, may not exist yet but their
// directory must) and signals on Changes() at most once per debounce window
// after a burst of changes. The current state of each path is the baseline:
// New itself does not signal. A nil log discards logs.
func New(paths []string, debounce time.Duration, log hclog.Logger) (*Watcher, error) {
	if debounce < 0 {
		return nil, fmt.Errorf("watch: negative debounce %s", debounce)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	abs, err := cleanPaths(paths)
	if err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: create fsnotify watcher: %w", err)
	}
	w := &Watcher{
		log:      log,
		debounce: debounce,
		fw:       fw,
		changes:  make(chan struct{}, 1),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		prints:   make(map[string]fingerprint),
	}
	w.mu.Lock()
	w.paths = abs
	err = w.refreshLocked()
	w.mu.Unlock()
	if err != nil {
		_ = fw.Close()
		return nil, err
	}
	w.wg.Add(2)
	go w.pump()
	go w.debounceLoop()
	return w, nil
}

// Changes returns the channel that receives a value after a change. It is
// buffered with room for one value, so signals the reader has not consumed
// yet merge into one. It is never closed: a reader should stop on its own
// shutdown signal, not on Close.
func (w *Watcher) Changes() <-chan struct{} { return w.changes }

// SetPaths replaces the set of watched paths, for when a reload names other
// module files. Paths already watched keep their last fingerprint, so a
// change to them that is still in the debounce window is not lost; new paths
// take their current state as the baseline. Call it before reading the newly
// named files so that a change made while reading them is reported.
//
// If a path's directory does not exist the set is left unchanged. If a
// directory cannot be watched (for example the inotify watch limit), the new
// set is kept and the error returned.
func (w *Watcher) SetPaths(paths []string) error {
	abs, err := cleanPaths(paths)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.paths = abs
	for p := range w.prints {
		if !slices.Contains(abs, p) {
			delete(w.prints, p)
		}
	}
	return w.refreshLocked()
}

// Close stops the watcher's goroutines and releases the fsnotify watcher. It
// waits for the goroutines to exit and is safe to call more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		// stop ends debounceLoop; closing fsnotify releases an Add
		// it may be inside and closes fsnotify's channels, which ends
		// pump. pump keeps reading until then, so nothing blocks.
		close(w.stop)
		if err := w.fw.Close(); err != nil {
			w.closeErr = fmt.Errorf("watch: close fsnotify watcher: %w", err)
		}
		w.wg.Wait()
	})
	return w.closeErr
}

// pump drains fsnotify's channels and turns every event or error into a
// kick. It never does anything that could block on fsnotify: fsnotify may
// hold its internal lock while it waits to hand us an error, so the
// goroutine that calls Add and Remove (debounce, or SetPaths) must not be
// the one that reads. It ends when fsnotify closes its channels in Close.
func (w *Watcher) pump() {
	defer w.wg.Done()
	events, errs := w.fw.Events, w.fw.Errors
	for events != nil || errs != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.log.Trace("fsnotify event", "path", ev.Name, "op", ev.Op.String())
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflow means events were dropped; any error may
			// mean the same. Look again rather than trust the gap.
			w.log.Warn("file watch error; rechecking watched files", "error", err)
		}
		select {
		case w.kick <- struct{}{}:
		default: // a kick is already waiting
		}
	}
}

// debounceLoop turns kicks into checks: each kick pushes the check to
// debounce after it, but never past maxWaitFactor×debounce after the first
// kick of the burst.
func (w *Watcher) debounceLoop() {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	pending := false
	var burstStart time.Time
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
			now := time.Now()
			if !pending {
				pending = true
				burstStart = now
			}
			deadline := now.Add(w.debounce)
			if latest := burstStart.Add(maxWaitFactor * w.debounce); deadline.After(latest) {
				deadline = latest
			}
			timer.Reset(time.Until(deadline))
		case <-timer.C:
			pending = false
			w.check()
		}
	}
}

// check re-resolves every path, moves the watches, and signals if a
// fingerprint changed.
func (w *Watcher) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if err := w.refreshLocked(); err != nil {
		w.log.Warn("cannot watch every directory; some changes may be missed", "error", err)
	}
}

// refreshLocked resolves the paths, points the watches at the directories
// their chains run through, compares fingerprints and signals on a change.
// A path seen for the first time only sets its baseline. It returns the
// errors from adding watches. w.mu must be held.
func (w *Watcher) refreshLocked() error {
	var (
		res    map[string]resolution
		addErr error
	)
	for round := 0; round < maxResolveRounds; round++ {
		res = make(map[string]resolution, len(w.paths))
		for _, p := range w.paths {
			res[p] = resolve(p)
		}
		var added int
		added, addErr = w.syncWatches(res)
		if added == 0 {
			break
		}
		// New directories are watched from now on; resolve again so
		// that nothing changed between the resolution and the watch.
	}

	var changed []string
	for _, p := range w.paths {
		fp := res[p].fp
		old, seen := w.prints[p]
		w.prints[p] = fp
		if seen && old != fp {
			changed = append(changed, p)
			w.log.Debug("watched file changed", "path", p,
				"real", fp.real, "exists", fp.exists, "problem", fp.problem)
		}
	}
	if len(changed) > 0 {
		w.log.Info("watched files changed", "paths", changed)
		select {
		case w.changes <- struct{}{}:
		default: // a signal is already waiting; it covers this one
		}
	}
	return addErr
}

// syncWatches makes the fsnotify watch list equal the directories needed by
// res. It returns how many watches it added (or found vanished, which also
// calls for another resolution) and the errors from adding.
// Errors from removing are only logged: the usual cause is a directory that
// was deleted (the old ConfigMap timestamp), whose watch the kernel already
// dropped.
func (w *Watcher) syncWatches(res map[string]resolution) (int, error) {
	want := make(map[string]bool)
	for _, r := range res {
		for _, d := range r.dirs {
			want[d] = true
		}
	}
	have := make(map[string]bool)
	for _, d := range w.fw.WatchList() {
		have[d] = true
	}
	for d := range have {
		if want[d] {
			continue
		}
		if err := w.fw.Remove(d); err != nil {
			w.log.Debug("stop watching directory", "dir", d, "error", err)
		}
	}
	var (
		added int
		errs  []error
	)
	for d := range want {
		if have[d] {
			continue
		}
		if err := w.fw.Add(d); err != nil {
			if errors.Is(err, fsnotify.ErrClosed) {
				return added, nil // shutting down
			}
			// The chain moved while we resolved it: count this as
			// a change to the watch list so the caller resolves
			// again and watches where the chain runs now.
			if errors.Is(err, os.ErrNotExist) {
				w.log.Debug("directory vanished before it could be watched", "dir", d)
				added++
				continue
			}
			errs = append(errs, fmt.Errorf("watch directory %q: %w", d, err))
			continue
		}
		added++
		w.log.Trace("watching directory", "dir", d)
	}
	return added, errors.Join(errs...)
}

// cleanPaths makes every path absolute and clean, drops duplicates, and checks
// that each path's directory exists, so a typo fails at once instead of
// watching nothing.
func cleanPaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("watch: path %q: %w", p, err)
		}
		dir := filepath.Dir(abs)
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("watch: directory of %q: %w", p, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("watch: directory of %q: %s is not a directory", p, dir)
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out, nil
}
