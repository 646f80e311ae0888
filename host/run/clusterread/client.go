package clusterread

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// UserAgent is what the clients Client makes send, so a cluster's audit
// log can tell simulate's reads from everything else.
const UserAgent = "wasmsched-simulate"

// Client rate limits. Read asks for a few hundred pages at most on a large
// cluster; client-go's defaults (5 per second) would make that a minute.
const (
	clientQPS   = 50
	clientBurst = 100
)

// ErrNotReadOnly is the error of a request ReadOnlyTransport refused.
var ErrNotReadOnly = errors.New("refused: reading a cluster for a simulation never writes to it")

// Client builds a clientset from a kubeconfig path ("" follows the usual
// loading rules: $KUBECONFIG, then ~/.kube/config, then the in-cluster
// configuration) whose transport refuses every request but GET (see
// ReadOnlyTransport): simulate never writes to the cluster it reads, and
// this makes sure of it below everything Read does. Its transport also
// counts the bytes of every response against lim (zero fields: the
// defaults), failing a response with a *LimitError at a limit. Each
// kubeconfig file must be a regular file of at most
// config.MaxFileBytes: a device or a FIFO is refused, naming it, before
// client-go reads it (without a bound, or waiting for a writer).
func Client(kubeconfig string, lim Limits) (kubernetes.Interface, error) {
	c, _, err := ClientWithTransport(kubeconfig, lim)
	return c, err
}

// ClientWithTransport is Client that also returns the guard its requests
// pass through, whose Requests tell what the client asked (tests prove
// with it that a read sent nothing but GETs).
func ClientWithTransport(kubeconfig string, lim Limits) (kubernetes.Interface, *ReadOnlyTransport, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	if err := checkKubeconfigs(rules); err != nil {
		return nil, nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if kubeconfig == "" {
			return nil, nil, fmt.Errorf("kubernetes client configuration ($KUBECONFIG, ~/.kube/config or in-cluster): %w", err)
		}
		return nil, nil, fmt.Errorf("kubernetes client configuration %q: %w", kubeconfig, err)
	}
	newByteBudget(lim).install(cfg)
	guard := &ReadOnlyTransport{}
	guard.Install(cfg) // outermost: a refused request reaches nothing
	cfg.UserAgent = UserAgent
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, guard, nil
}

// checkKubeconfigs refuses a kubeconfig file that the loading rules
// would read and that is not a regular file within config.MaxFileBytes;
// missing files are client-go's to report or skip.
func checkKubeconfigs(rules *clientcmd.ClientConfigLoadingRules) error {
	paths := rules.Precedence
	if rules.ExplicitPath != "" {
		paths = []string{rules.ExplicitPath}
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		err := boundedread.Check(p, config.MaxFileBytes, boundedread.Regular, "a kubeconfig file")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ReadOnlyTransport guards a client's HTTP transport: a GET goes through,
// any other method (POST, PUT, PATCH, DELETE, ...) is refused with
// ErrNotReadOnly naming the method and URL, before anything is sent. It
// counts requests by method, refused ones included. Installed with
// rest.Config.Wrap, it sees every request the client makes to the API
// server, with its authentication, and refuses before the transport
// wrappers installed earlier see the request. Safe for concurrent use;
// the zero value is ready.
type ReadOnlyTransport struct {
	mu       sync.Mutex
	requests map[string]int
}

// Install wraps cfg's transport with t, around any wrapper already set
// (rest.Config.Wrap): a refused request reaches none of them.
func (t *ReadOnlyTransport) Install(cfg *rest.Config) {
	cfg.Wrap(t.Wrap)
}

// Wrap returns next behind the guard; a transport.WrapperFunc.
func (t *ReadOnlyTransport) Wrap(next http.RoundTripper) http.RoundTripper {
	return &guarded{t: t, next: next}
}

// Requests returns how many requests were made, by HTTP method.
func (t *ReadOnlyTransport) Requests() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.requests)
}

func (t *ReadOnlyTransport) count(method string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.requests == nil {
		t.requests = map[string]int{}
	}
	t.requests[method]++
}

// guarded is one transport behind a ReadOnlyTransport.
type guarded struct {
	t    *ReadOnlyTransport
	next http.RoundTripper
}

func (g *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	g.t.count(req.Method)
	if req.Method != http.MethodGet {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even when it fails
		}
		return nil, fmt.Errorf("%w: %s %s", ErrNotReadOnly, req.Method, req.URL.Redacted())
	}
	return g.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go reach the transport underneath
// (k8s.io/apimachinery/pkg/util/net.RoundTripperWrapper).
func (g *guarded) WrappedRoundTripper() http.RoundTripper { return g.next }
