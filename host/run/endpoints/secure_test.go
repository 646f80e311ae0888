package endpoints

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"

	"github.com/wasmsched/wasmsched/host/config"
)

// fakeAPI answers TokenReviews and SubjectAccessReviews as an API server
// would for two ServiceAccount tokens: "scraper-token" (user scraper, who
// may get /metrics) and "nobody-token" (user nobody, who may get
// nothing). It counts the reviews, so a test sees what was cached.
type fakeAPI struct {
	mu                sync.Mutex
	tokenReviews, sar int
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		f.tokenReviews++
		var tr authnv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		if name, ok := map[string]string{"scraper-token": "scraper", "nobody-token": "nobody"}[tr.Spec.Token]; ok {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: name, Groups: []string{"system:serviceaccounts"}}}
		}
		_ = json.NewEncoder(w).Encode(tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		f.sar++
		var sar authzv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&sar)
		na := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "scraper" && na != nil && na.Path == "/metrics" && na.Verb == "get"
		_ = json.NewEncoder(w).Encode(sar)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAPI) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenReviews, f.sar
}

// kubeconfigFor writes a kubeconfig pointing at url.
func kubeconfigFor(t *testing.T, url string) string {
	return writeFile(t, "kubeconfig", fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, url))
}

// parsed returns SecureServing with args parsed as serve would.
func parsed(t *testing.T, args ...string) *SecureServing {
	t.Helper()
	s := NewSecureServing()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	s.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return s
}

// startOnLoopback starts s on a free loopback port behind h.
func startOnLoopback(t *testing.T, s *SecureServing, h http.Handler, kubeconfig string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Serving.Listener = ln
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := s.Start(ctx, h, kubeconfig, hclog.NewNullLogger())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-srv.Stopped() })
	return "https://" + srv.Addr().String()
}

type client struct {
	t     *testing.T
	http  *http.Client
	token string
}

func newClient(t *testing.T, roots *x509.CertPool, certs ...tls.Certificate) *client {
	tc := &tls.Config{Certificates: certs, RootCAs: roots, InsecureSkipVerify: roots == nil} //nolint:gosec // the self-signed certificate has no CA to check against
	return &client{t: t, http: &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}}
}

func (c *client) bearer(token string) *client {
	cp := *c
	cp.token = token
	return &cp
}

func (c *client) get(url string) (int, string, *tls.ConnectionState) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.TLS
}

// TestSecurePortAuthenticatesAuthorizesAndCaches runs the secure port
// with serve's defaults against a fake API server: the health paths
// answer anyone; /metrics answers 401 without credentials or with a
// token the API server does not know, 403 to an identity the
// SubjectAccessReview denies, 200 to one it allows, to a client
// certificate in system:masters and to one whose user may get it; a
// certificate from another CA is refused; and decisions are cached, so
// repeated scrapes cost one TokenReview and one SubjectAccessReview per
// identity.
func TestSecurePortAuthenticatesAuthorizesAndCaches(t *testing.T) {
	api := &fakeAPI{}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()
	ca, other := newTestCA(t, "client-ca"), newTestCA(t, "another-ca")
	s := parsed(t, "--client-ca-file", writeFile(t, "ca.crt", ca.pem), "--authentication-skip-lookup")
	cz := &Configz{}
	cz.Set(config.Default())
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "wasmsched_test_total", Help: "a metric the test looks for"}))
	base := startOnLoopback(t, s, NewMux(Sources{Gatherer: reg, Configz: cz}), kubeconfigFor(t, apiSrv.URL))
	anyone := newClient(t, nil)

	for _, p := range AlwaysAllowed {
		if code, body, _ := anyone.get(base + p); code != http.StatusOK {
			t.Errorf("%s without credentials = %d %s, want 200", p, code, body)
		}
	}
	if tr, sar := api.counts(); tr+sar != 0 {
		t.Errorf("the health paths cost %d TokenReviews and %d SubjectAccessReviews, want none", tr, sar)
	}
	code, body, state := anyone.get(base + "/metrics")
	if code != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials = %d %s, want 401", code, body)
	}
	if state == nil || state.Version < tls.VersionTLS12 {
		t.Errorf("TLS state %+v, want TLS 1.2 or later", state)
	}
	if code, body, _ := anyone.bearer("forged").get(base + "/metrics"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with an unknown token = %d %s, want 401", code, body)
	}
	for i := 0; i < 3; i++ {
		if code, body, _ := anyone.bearer("nobody-token").get(base + "/metrics"); code != http.StatusForbidden || !strings.Contains(body, `User \"nobody\" cannot get path \"/metrics\"`) {
			t.Errorf("/metrics as nobody = %d %s, want 403 naming the user and path", code, body)
		}
	}
	tr0, sar0 := api.counts()
	scraper := anyone.bearer("scraper-token")
	for i := 0; i < 5; i++ {
		if code, body, _ := scraper.get(base + "/metrics"); code != http.StatusOK || !strings.Contains(body, "wasmsched_test_total") {
			t.Fatalf("/metrics as scraper = %d %s, want 200 with the registry", code, body)
		}
	}
	if tr, sar := api.counts(); tr-tr0 != 1 || sar-sar0 != 1 {
		t.Errorf("5 scrapes cost %d TokenReviews and %d SubjectAccessReviews, want 1 and 1 (cached)", tr-tr0, sar-sar0)
	}
	if tr0 != 2 || sar0 != 1 {
		t.Errorf("an unknown token and 3 denied requests cost %d TokenReviews and %d SubjectAccessReviews, want 2 and 1 (the denial cached)", tr0, sar0)
	}
	if code, _, _ := scraper.get(base + "/configz"); code != http.StatusForbidden {
		t.Errorf("/configz as scraper (allowed only /metrics) = %d, want 403", code)
	}

	masters := newClient(t, nil, ca.clientCert(t, "admin", "system:masters"))
	code, body, _ = masters.get(base + "/configz")
	if code != http.StatusOK || !strings.Contains(body, `"componentconfig"`) || !strings.Contains(body, config.DefaultSchedulerName) {
		t.Errorf("/configz with a system:masters certificate = %d %s, want 200 with the configuration", code, body)
	}
	if code, body, _ := newClient(t, nil, ca.clientCert(t, "scraper")).get(base + "/metrics"); code != http.StatusOK {
		t.Errorf("/metrics with a certificate for scraper = %d %s, want 200", code, body)
	}
	if code, body, _ := newClient(t, nil, other.clientCert(t, "admin", "system:masters")).get(base + "/metrics"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a certificate from another CA = %d %s, want 401", code, body)
	}
	old := newClient(t, nil)
	old.http.Transport.(*http.Transport).TLSClientConfig.MaxVersion = tls.VersionTLS11
	if code, body, _ := old.get(base + "/healthz"); code != 0 {
		t.Errorf("/healthz over TLS 1.1 = %d %s, want a refused handshake", code, body)
	}
}

// TestSecurePortServesTheGivenCertificate: with --tls-cert-file and
// --tls-private-key-file the port serves that certificate, which a
// client that trusts its CA verifies.
func TestSecurePortServesTheGivenCertificate(t *testing.T) {
	ca := newTestCA(t, "serving-ca")
	crt, key := ca.issue(t, "wasmsched", nil, net.IPv4(127, 0, 0, 1))
	s := parsed(t, "--tls-cert-file", writeFile(t, "tls.crt", crt), "--tls-private-key-file", writeFile(t, "tls.key", key), "--authentication-skip-lookup")
	base := startOnLoopback(t, s, NewMux(Sources{Gatherer: prometheus.NewRegistry()}), "")
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	if code, body, _ := newClient(t, roots).get(base + "/livez"); code != http.StatusOK {
		t.Errorf("/livez verified against the serving CA = %d %s", code, body)
	}
}

// TestSecurePortFlagsFailClearly: every bad setting is refused before
// anything is bound, by an error naming its flag.
func TestSecurePortFlagsFailClearly(t *testing.T) {
	ca := newTestCA(t, "ca")
	crt, key := ca.issue(t, "wasmsched", nil, net.IPv4(127, 0, 0, 1))
	crtFile, keyFile := writeFile(t, "tls.crt", crt), writeFile(t, "tls.key", key)
	garbage := writeFile(t, "garbage", []byte("not a certificate"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--secure-port", "70000"}, "--secure-port 70000: want 0 (off) to 65535"},
		{[]string{"--secure-port", "-1"}, "--secure-port -1: want 0 (off) to 65535"},
		{[]string{"--tls-cert-file", crtFile}, "--tls-cert-file and --tls-private-key-file go together"},
		{[]string{"--tls-cert-file", "/nonexistent/tls.crt", "--tls-private-key-file", keyFile}, `--tls-cert-file "/nonexistent/tls.crt"`},
		{[]string{"--tls-cert-file", crtFile, "--tls-private-key-file", garbage}, `--tls-private-key-file "` + garbage},
		{[]string{"--client-ca-file", "/nonexistent/ca.crt"}, `--client-ca-file "/nonexistent/ca.crt"`},
		{[]string{"--client-ca-file", garbage}, `--client-ca-file "` + garbage + `": error reading ` + garbage + `: data does not contain any valid RSA or ECDSA certificates`},
		{[]string{"--requestheader-client-ca-file", garbage}, "--requestheader-client-ca-file"},
		{[]string{"--authentication-kubeconfig", "/nonexistent/kubeconfig"}, `--authentication-kubeconfig "/nonexistent/kubeconfig"`},
		{[]string{"--authorization-kubeconfig", garbage}, `--authorization-kubeconfig "` + garbage},
		{[]string{"--tls-min-version", "VersionTLS11"}, "--tls-min-version VersionTLS11: TLS 1.2 or later is required"},
		{[]string{"--tls-min-version", "TLS9"}, `--tls-min-version: unknown tls version "TLS9"`},
		{[]string{"--tls-cipher-suites", "NOPE"}, "--tls-cipher-suites: Cipher suite NOPE not supported"},
		{[]string{"--authorization-webhook-cache-authorized-ttl", "-1s"}, "--authorization-webhook-cache-authorized-ttl -1s: must not be negative"},
		{[]string{"--authorization-always-allow-paths", "/he*lthz"}, "--authorization-always-allow-paths: only trailing * allowed"},
	} {
		err := parsed(t, tc.args...).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
		if _, err := parsed(t, tc.args...).Start(context.Background(), http.NotFoundHandler(), "", nil); err == nil {
			t.Errorf("%v: Start succeeded", tc.args)
		}
	}
	if err := parsed(t, "--secure-port", "0", "--client-ca-file", garbage).Validate(); err != nil {
		t.Errorf("with the secure port off the other settings are not used: %v", err)
	}
	if err := parsed(t, "--tls-cert-file", crtFile, "--tls-private-key-file", keyFile, "--client-ca-file", writeFile(t, "ca.crt", ca.pem)).Validate(); err != nil {
		t.Errorf("good files: %v", err)
	}
}

// TestSecurePortBusyNamesTheFlag: a port in use fails Start, naming
// --secure-port and --bind-address.
func TestSecurePortBusyNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	s := parsed(t, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port), "--authentication-skip-lookup")
	_, err = s.Start(context.Background(), http.NotFoundHandler(), "", nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--secure-port %d on --bind-address 127.0.0.1", port)) || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Start on a busy port: %v, want an error naming the flags", err)
	}
}

// TestChainAlwaysAllowedDeniedAndAnonymous drives the handler chain with
// fake authentication and authorization: a request without credentials
// gets through only on an always-allowed path (401 elsewhere, before any
// authorization is asked), an identity the authorizer denies gets 403,
// an allowed one reaches the handler, and a panic in it is a 500.
func TestChainAlwaysAllowedDeniedAndAnonymous(t *testing.T) {
	open, err := path.NewAuthorizer(AlwaysAllowed)
	if err != nil {
		t.Fatal(err)
	}
	authn := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		switch r.Header.Get("Authorization") {
		case "":
			return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
		case "Bearer broken":
			return nil, false, fmt.Errorf("review failed")
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}}, true, nil
	})
	var asked []string
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a.GetUser().GetName()+" "+a.GetVerb()+" "+a.GetPath())
		if d, _, _ := open.Authorize(context.Background(), a); d == authorizer.DecisionAllow {
			return d, "", nil
		}
		if a.GetUser().GetName() == "scraper" && (a.GetPath() == "/metrics" || a.GetPath() == "/panic") && !a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionDeny, "not allowed", nil
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		fmt.Fprint(w, "reached")
	})
	h := chain(mux, anonymousOnlyOn(open, authn), authz, nil)
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
		{"/livez", "", http.StatusOK},
		{"/metrics", "", http.StatusUnauthorized},
		{"/healthz/extra", "", http.StatusUnauthorized},
		{"/metrics", "broken", http.StatusUnauthorized},
		{"/metrics", "nobody", http.StatusForbidden},
		{"/configz", "scraper", http.StatusForbidden},
		{"/metrics", "scraper", http.StatusOK},
		{"/panic", "scraper", http.StatusInternalServerError},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		func() {
			defer func() { _ = recover() }() // the panic filter re-panics with http.ErrAbortHandler after answering
			h.ServeHTTP(rec, req)
		}()
		if rec.Code != tc.want {
			t.Errorf("GET %s as %q = %d %s, want %d", tc.path, tc.token, rec.Code, rec.Body, tc.want)
		}
		if tc.want == http.StatusOK && rec.Body.String() != "reached" && tc.path == "/metrics" {
			t.Errorf("GET %s did not reach the handler: %s", tc.path, rec.Body)
		}
	}
	for _, a := range asked {
		if name, p, _ := strings.Cut(a, " get "); name == user.Anonymous && !slices.Contains(AlwaysAllowed, p) {
			t.Errorf("authorization asked for an anonymous request off the health paths: %s", a)
		}
	}
}

// TestClientCALookupFailure: without --client-ca-file the client CA is
// read from kube-system/extension-apiserver-authentication; when that
// fails, serve starts with client certificates refused, or, with
// --authentication-tolerate-lookup-failure=false, does not start.
func TestClientCALookupFailure(t *testing.T) {
	apiSrv := httptest.NewServer(&fakeAPI{}) // has no ConfigMaps
	defer apiSrv.Close()
	kc := kubeconfigFor(t, apiSrv.URL)
	_, err := parsed(t, "--authentication-tolerate-lookup-failure=false").Start(context.Background(), http.NotFoundHandler(), kc, nil)
	if err == nil || !strings.Contains(err.Error(), "extension-apiserver-authentication") || !strings.Contains(err.Error(), "--authentication-tolerate-lookup-failure=false") {
		t.Errorf("an intolerant failed lookup: %v, want an error naming the ConfigMap and the flag", err)
	}
	ca := newTestCA(t, "cluster-ca")
	base := startOnLoopback(t, parsed(t), NewMux(Sources{Gatherer: prometheus.NewRegistry()}), kc)
	if code, body, _ := newClient(t, nil, ca.clientCert(t, "admin", "system:masters")).get(base + "/metrics"); code != http.StatusUnauthorized {
		t.Errorf("a client certificate with no client CA known = %d %s, want 401", code, body)
	}
	if code, _, _ := newClient(t, nil).get(base + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
}
