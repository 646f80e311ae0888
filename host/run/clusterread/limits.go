package clusterread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// Defaults of the limits on reading a cluster. A page of DefaultPageSize
// objects is a few MiB on real clusters (pods with large annotations make
// it tens); the API server refuses objects over about 1.5 MiB. The total
// allows about 10 KiB per object at DefaultMaxObjects. A list request
// answers in well under a second; the whole read of the largest clusters
// (a few hundred pages) in a minute or two.
const (
	DefaultMaxPageBytes   = 128 << 20
	DefaultMaxBytes       = 2 << 30
	DefaultRequestTimeout = time.Minute
	DefaultTimeout        = 10 * time.Minute
)

// Limit names one of the limits a read can be cut at.
type Limit int

// The limits: LimitPageBytes and LimitBytes are Limits' (counted in the
// client's transport as the bytes arrive), LimitRequestTime and LimitTime
// are Options' (deadlines on Read's requests and on Read).
const (
	LimitPageBytes Limit = iota + 1
	LimitBytes
	LimitRequestTime
	LimitTime
)

// LimitError is the error of a read cut at one of its limits. It names
// the limit and its value, so that the caller can say which setting
// raises it (simulate names its flag); Read prefixes the resource whose
// list was cut.
type LimitError struct {
	Limit Limit
	// Value is the limit, as the user would write it ("128 MiB", "1m0s").
	Value string
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitPageBytes:
		return fmt.Sprintf("a response is larger than %s, the limit for one response (one page of a list)", e.Value)
	case LimitBytes:
		return fmt.Sprintf("the responses together are larger than %s, the limit for reading the cluster", e.Value)
	case LimitRequestTime:
		return fmt.Sprintf("no complete response within %s, the time limit for one request", e.Value)
	case LimitTime:
		return fmt.Sprintf("reading the cluster took longer than %s, its time limit", e.Value)
	}
	return fmt.Sprintf("limit %d (%s) reached", e.Limit, e.Value)
}

// Unwrap makes a time limit's error a context.DeadlineExceeded too.
func (e *LimitError) Unwrap() error {
	if e.Limit == LimitRequestTime || e.Limit == LimitTime {
		return context.DeadlineExceeded
	}
	return nil
}

// Limits bound what a client made by Client receives: the body of each
// response, and the bodies of all its responses together. Both are
// counted as the bytes arrive, below client-go's decoder, so that a huge
// or endless page is cut at the limit rather than read whole and decoded
// (the object count, Options.MaxObjects, can only be checked after a page
// is decoded). Bodies are counted after the transport has decompressed
// them.
type Limits struct {
	// MaxPageBytes bounds one response's body; 0 means
	// DefaultMaxPageBytes.
	MaxPageBytes int64
	// MaxBytes bounds the bodies of all responses together; 0 means
	// DefaultMaxBytes.
	MaxBytes int64
}

func (l Limits) defaulted() Limits {
	if l.MaxPageBytes <= 0 {
		l.MaxPageBytes = DefaultMaxPageBytes
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// byteBudget is one client's Limits, and the bytes it has received.
type byteBudget struct {
	page, total int64
	used        atomic.Int64
	pageErr     *LimitError
	totalErr    *LimitError
}

func newByteBudget(l Limits) *byteBudget {
	l = l.defaulted()
	return &byteBudget{page: l.MaxPageBytes, total: l.MaxBytes,
		pageErr:  &LimitError{Limit: LimitPageBytes, Value: boundedread.Size(l.MaxPageBytes)},
		totalErr: &LimitError{Limit: LimitBytes, Value: boundedread.Size(l.MaxBytes)}}
}

// install wraps cfg's transport so that every response body is counted.
func (b *byteBudget) install(cfg *rest.Config) {
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return &budgeted{b: b, next: next} })
}

// budgeted is a transport whose response bodies count against a budget.
type budgeted struct {
	b    *byteBudget
	next http.RoundTripper
}

func (t *budgeted) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.b.used.Load() > t.b.total {
		closeBody(req)
		return nil, t.b.totalErr
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > t.b.page {
		// Said up front: nothing of it is read.
		resp.Body.Close()
		return nil, t.b.pageErr
	}
	resp.Body = &countedBody{rc: resp.Body, b: t.b, left: t.b.page}
	return resp, nil
}

// WrappedRoundTripper lets client-go reach the transport underneath.
func (t *budgeted) WrappedRoundTripper() http.RoundTripper { return t.next }

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// countedBody is a response body that fails once its response passes the
// page limit or the client's responses pass the total; the bytes past a
// limit are never returned.
type countedBody struct {
	rc   io.ReadCloser
	b    *byteBudget
	left int64 // bytes this response may still have
}

func (c *countedBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.b.pageErr
	}
	// Ask for one byte more than allowed, to tell "exactly at the limit"
	// from "past it".
	if int64(len(p)) > c.left { // not c.left+1, which wraps at MaxInt64
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n - int(-c.left), c.b.pageErr
	}
	if c.b.used.Add(int64(n)) > c.b.total {
		return 0, c.b.totalErr
	}
	return n, err
}

func (c *countedBody) Close() error { return c.rc.Close() }

// cut is the LimitError err carries, if a limit cut the read: from the
// transport's counting, or the cause of the deadline ctx passed.
func cut(ctx context.Context, err error) *LimitError {
	var le *LimitError
	if errors.As(err, &le) {
		return le
	}
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &le) {
		return le
	}
	return nil
}
