package clusterread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiServer is a stand-in API server that answers every GET with an
// empty list of the right shape and records what reached it.
type apiServer struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []string // "METHOD path"
	agents []string
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.Path)
		s.agents = append(s.agents, r.UserAgent())
		s.mu.Unlock()
		if r.Method != http.MethodGet {
			http.Error(w, "a write reached the server", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "List", "apiVersion": "v1", "metadata": map[string]any{}, "items": []any{}})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// writeKubeconfig points a kubeconfig at the server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: secret-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every write a clientset can make is refused before it leaves the
// process, naming the method and URL; reads go through.
func TestClientRefusesEveryWrite(t *testing.T) {
	srv := newAPIServer(t)
	client, guard, err := ClientWithTransport(writeKubeconfig(t, srv.URL), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	if _, err := pods.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("a list was refused: %v", err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	writes := []struct {
		method string
		call   func() error
	}{
		{"POST", func() error { _, err := pods.Create(ctx, p, metav1.CreateOptions{}); return err }},
		{"PUT", func() error { _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); return err }},
		{"PATCH", func() error {
			_, err := pods.Patch(ctx, "p", ktypes.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		}},
		{"DELETE", func() error { return pods.Delete(ctx, "p", metav1.DeleteOptions{}) }},
		{"POST", func() error {
			return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Name: "n"}}, metav1.CreateOptions{})
		}},
		{"POST", func() error {
			_, err := client.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, w := range writes {
		err := w.call()
		if !errors.Is(err, ErrNotReadOnly) || !strings.Contains(err.Error(), w.method+" "+srv.URL+"/api/v1/namespaces/default/") {
			t.Errorf("%s: err = %v", w.method, err)
		}
	}
	if got := srv.requests(); len(got) != 1 || got[0] != "GET /api/v1/namespaces/default/pods" {
		t.Errorf("the server saw %v, want only the list", got)
	}
	if got := guard.Requests(); got["GET"] != 1 || got["POST"] != 3 || got["PUT"] != 1 || got["PATCH"] != 1 || got["DELETE"] != 1 || len(got) != 5 {
		t.Errorf("requests by method = %v", got)
	}
	if srv.agents[0] != UserAgent {
		t.Errorf("user agent %q, want %q", srv.agents[0], UserAgent)
	}
}

// Read through a guarded client asks only GETs, one list per kind.
func TestReadThroughTheGuardedClient(t *testing.T) {
	srv := newAPIServer(t)
	client, guard, err := ClientWithTransport(writeKubeconfig(t, srv.URL), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), client, Options{PageSize: 7}); err != nil {
		t.Fatal(err)
	}
	if got := guard.Requests(); len(got) != 1 || got["GET"] != 8 {
		t.Errorf("requests by method = %v, want 8 GETs", got)
	}
	for _, r := range srv.requests() {
		if !strings.HasPrefix(r, "GET ") {
			t.Errorf("server saw %s", r)
		}
	}
}

type closeRecorder struct {
	strings.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// A refused request's body is closed, as http.RoundTripper requires, and
// the transport underneath never sees the request.
func TestRefusalClosesTheBody(t *testing.T) {
	var reached bool
	rt := (&ReadOnlyTransport{}).Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) { reached = true; return nil, errors.New("x") }))
	body := &closeRecorder{Reader: *strings.NewReader("{}")}
	req, err := http.NewRequest(http.MethodPost, "https://user:pw@example.com/api", body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.RoundTrip(req)
	if !errors.Is(err, ErrNotReadOnly) || !body.closed || reached {
		t.Fatalf("err = %v, body closed %v, reached %v", err, body.closed, reached)
	}
	if strings.Contains(err.Error(), "pw") {
		t.Fatalf("the error shows the password: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Install keeps wrappers already configured and guards around them: a
// refused request reaches none.
func TestInstallKeepsOtherWrappers(t *testing.T) {
	srv := newAPIServer(t)
	var outer int
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) { outer++; return rt.RoundTrip(r) })
	})
	guard := &ReadOnlyTransport{}
	guard.Install(cfg)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	err = c.CoreV1().Nodes().Delete(context.Background(), "n", metav1.DeleteOptions{})
	if outer != 1 || !errors.Is(err, ErrNotReadOnly) || len(srv.requests()) != 1 {
		t.Fatalf("outer wrapper saw %d requests; delete err %v; server saw %v", outer, err, srv.requests())
	}
}

func TestClientNamesABadKubeconfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Client(missing, Limits{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("err = %v", err)
	}
}

// A page or total limit of MaxInt64 (the largest --from-cluster-max-*
// value) counts like any other: asking for one byte more than allowed
// must not wrap.
func TestCountedBodyWithMaxInt64Limits(t *testing.T) {
	b := newByteBudget(Limits{MaxPageBytes: math.MaxInt64, MaxBytes: math.MaxInt64})
	body := &countedBody{rc: io.NopCloser(strings.NewReader("a page")), b: b, left: b.page}
	got, err := io.ReadAll(body)
	if err != nil || string(got) != "a page" {
		t.Fatalf("read %q, %v", got, err)
	}
}
