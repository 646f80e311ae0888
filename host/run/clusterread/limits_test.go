package clusterread

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
)

// hostileServer answers every request with handle, and ends its handlers
// when the test ends (httptest's Close waits for them).
func hostileServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, stop <-chan struct{})) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, stop) }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	return srv
}

// readWithin reads the server's cluster through a Client with lim and
// opts, failing the test if Read has not returned within a generous
// deadline: the point is that it ends, with an error, well before.
func readWithin(t *testing.T, srv *httptest.Server, lim Limits, opts Options) error {
	t.Helper()
	client, err := Client(writeKubeconfig(t, srv.URL), lim)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Read(ctx, client, opts); done <- err }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("Read did not return")
		return nil
	}
}

// wantCut checks that err is a read cut at limit, naming the resource
// (priorityclasses: the first list Read makes) and the limit's value.
func wantCut(t *testing.T, err error, limit Limit, want string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("err = %v, want a cut at limit %d", err, limit)
	}
	if !strings.HasPrefix(err.Error(), "list priorityclasses: ") || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %q, want it to name the list and contain %q", err, want)
	}
	if strings.Contains(err.Error(), "Please retry") {
		t.Errorf("err = %q: client-go's wrapping leaked", err)
	}
}

// A page of a list larger than the limit is cut as it arrives, before
// client-go reads it whole and decodes it: with no length announced (a
// stream), and with a length announced (refused before reading). Memory
// stays near the limit, not near what the server sends.
func TestReadCutsAHugePage(t *testing.T) {
	const serverCap = 256 << 20
	var sent atomic.Int64
	chunk := []byte(`{"kind":"PriorityClassList","apiVersion":"scheduling.k8s.io/v1","metadata":{},"items":[` + strings.Repeat(" ", 64<<10))
	stream := hostileServer(t, func(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		for sent.Load() < serverCap {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := readWithin(t, stream, Limits{MaxPageBytes: 1 << 20}, Options{})
	runtime.ReadMemStats(&after)
	wantCut(t, err, LimitPageBytes, "larger than 1 MiB, the limit for one response")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("reading a page cut at 1 MiB allocated %d MiB", alloc>>20)
	}

	announced := hostileServer(t, func(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // never sends the body
		case <-r.Context().Done():
		case <-stop:
		}
	})
	err = readWithin(t, announced, Limits{MaxPageBytes: 1 << 20}, Options{})
	wantCut(t, err, LimitPageBytes, "larger than 1 MiB")
}

// Pages each under the page limit are cut once together they pass the
// total.
func TestReadCutsTheTotal(t *testing.T) {
	page := `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}` + strings.Repeat(" ", 700<<10)
	srv := hostileServer(t, func(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(page))
	})
	err := readWithin(t, srv, Limits{MaxPageBytes: 1 << 20, MaxBytes: 2 << 20}, Options{})
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != LimitBytes || !strings.Contains(err.Error(), "larger than 2 MiB, the limit for reading the cluster") {
		t.Fatalf("err = %v", err)
	}
	// The third list passes 2 MiB: nodes, after priorityclasses and
	// namespaces.
	if !strings.HasPrefix(err.Error(), "list nodes: ") {
		t.Errorf("err = %q, want the list that passed the total", err)
	}
}

// A server that accepts the request and never answers is cut at the
// per-request deadline.
func TestReadCutsAStalledServer(t *testing.T) {
	srv := hostileServer(t, func(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	err := readWithin(t, srv, Limits{}, Options{RequestTimeout: 200 * time.Millisecond})
	wantCut(t, err, LimitRequestTime, "no complete response within 200ms, the time limit for one request")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a context.DeadlineExceeded", err)
	}
}

// A server that sends its answer a byte at a time, never finishing, is
// cut at the per-request deadline, and, when that is long, at the whole
// read's.
func TestReadCutsADrippingServer(t *testing.T) {
	srv := hostileServer(t, func(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			case <-stop:
				return
			}
		}
	})
	err := readWithin(t, srv, Limits{}, Options{RequestTimeout: 300 * time.Millisecond})
	wantCut(t, err, LimitRequestTime, "within 300ms")
	err = readWithin(t, srv, Limits{}, Options{RequestTimeout: time.Hour, Timeout: 300 * time.Millisecond})
	wantCut(t, err, LimitTime, "reading the cluster took longer than 300ms, its time limit")
}

// A kubeconfig that is a device or a FIFO is refused, naming it, before
// client-go reads it without a bound or waits on it.
func TestClientRefusesASpecialKubeconfig(t *testing.T) {
	fifo := specialfiles.FIFO(t, t.TempDir(), "kubeconfig")
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: is a character device, not a regular file"},
		{fifo, fifo + ": is a pipe (FIFO), not a regular file"},
	} {
		err := specialfiles.Load(t, 20*time.Second, "loading kubeconfig "+tc.path, func() error { _, err := Client(tc.path, Limits{}); return err })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Client(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
	t.Setenv("KUBECONFIG", fifo)
	err := specialfiles.Load(t, 20*time.Second, "loading $KUBECONFIG", func() error { _, err := Client("", Limits{}); return err })
	if err == nil || !strings.Contains(err.Error(), fifo+": is a pipe (FIFO)") {
		t.Errorf("$KUBECONFIG a FIFO: %v", err)
	}
}
