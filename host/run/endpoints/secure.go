package endpoints

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/wasmsched/wasmsched/host/metrics"
)

// DefaultSecurePort is kube-scheduler's secure port, which serve uses too:
// a wasmsched pod has its own network namespace, so it does not clash
// with a kube-scheduler on the node (use another --secure-port when both
// run in the host's network).
const DefaultSecurePort = 10259

// SecureServing are the secure port's settings, as kube-scheduler's flags
// set them (--secure-port, --bind-address, --tls-*, --client-ca-file,
// --authentication-*, --authorization-*, --requestheader-*): the
// k8s.io/apiserver option sets kube-scheduler uses, with its defaults.
type SecureServing struct {
	Serving        *options.SecureServingOptions
	Authentication *options.DelegatingAuthenticationOptions
	Authorization  *options.DelegatingAuthorizationOptions
}

// NewSecureServing returns kube-scheduler's defaults: port 10259 on all
// interfaces, a self-signed certificate for localhost and 127.0.0.1 made
// at start and kept in memory (no --cert-dir, so nothing is written to a
// read-only root filesystem), tokens and SubjectAccessReviews through the
// in-cluster configuration when no kubeconfig is named, the client CA
// looked up in kube-system's extension-apiserver-authentication
// ConfigMap when --client-ca-file is not given (a failed lookup is
// logged, not fatal), decisions cached 10s, and /healthz, /readyz and
// /livez open to anyone.
func NewSecureServing() *SecureServing {
	s := &SecureServing{
		Serving:        options.NewSecureServingOptions(),
		Authentication: options.NewDelegatingAuthenticationOptions(),
		Authorization:  options.NewDelegatingAuthorizationOptions(),
	}
	s.Serving.BindPort = DefaultSecurePort
	s.Serving.ServerCert.CertDirectory = ""
	s.Serving.ServerCert.PairName = "wasmsched"
	s.Authentication.RemoteKubeConfigFileOptional = true
	s.Authentication.TolerateInClusterLookupFailure = true
	s.Authorization.RemoteKubeConfigFileOptional = true
	s.Authorization.AlwaysAllowPaths = append([]string(nil), AlwaysAllowed...)
	return s
}

// AddFlags registers kube-scheduler's secure serving, authentication and
// authorization flags on fs, their help saying what wasmsched does when
// they are left empty.
func (s *SecureServing) AddFlags(fs *pflag.FlagSet) {
	s.Serving.AddFlags(fs)
	s.Authentication.AddFlags(fs)
	s.Authorization.AddFlags(fs)
	for name, usage := range map[string]string{
		"authentication-kubeconfig": "kubeconfig of the API server that reviews bearer tokens (tokenreviews create) and holds the " +
			"extension-apiserver-authentication ConfigMap; empty: --kubeconfig, else the in-cluster configuration",
		"authorization-kubeconfig": "kubeconfig of the API server that authorizes requests (subjectaccessreviews create); " +
			"empty: --kubeconfig, else the in-cluster configuration",
		"tls-cert-file": "x509 certificate for HTTPS on --secure-port (intermediates after it); empty: a self-signed certificate " +
			"for localhost and 127.0.0.1, kept in memory unless --cert-dir is given",
		"client-ca-file": "CA bundle: a client certificate it signed authenticates as its CommonName (user) and Organizations " +
			"(groups); empty: the client-ca-file of kube-system's extension-apiserver-authentication ConfigMap, unless --authentication-skip-lookup",
	} {
		if f := fs.Lookup(name); f != nil {
			f.Usage = usage
		}
	}
}

// Enabled reports whether the secure port is served (--secure-port 0
// turns it off).
func (s *SecureServing) Enabled() bool {
	return s.Serving.BindPort != 0 || s.Serving.Listener != nil
}

// Validate checks the settings and the files they name before anything
// is bound, so a bad flag fails serve at once with an error that names
// it: a port out of range, a certificate without its key or one that does
// not load, a CA file with no certificate, a kubeconfig that does not
// load, a TLS version below 1.2, an unknown cipher suite, a negative
// cache TTL or a malformed always-allowed path.
func (s *SecureServing) Validate() error {
	if p := s.Serving.BindPort; p < 0 || p > 65535 {
		return fmt.Errorf("--secure-port %d: want 0 (off) to 65535", p)
	}
	errs := append([]error(nil), s.Serving.Validate()...)
	if len(errs) > 0 || !s.Enabled() {
		return errors.Join(errs...)
	}
	cert, key := s.Serving.ServerCert.CertKey.CertFile, s.Serving.ServerCert.CertKey.KeyFile
	switch {
	case (cert == "") != (key == ""):
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together: give both, or neither for a self-signed certificate kept in memory"))
	case cert != "":
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			errs = append(errs, fmt.Errorf("--tls-cert-file %q, --tls-private-key-file %q: %w", cert, key, err))
		}
	}
	for _, nck := range s.Serving.SNICertKeys {
		if _, err := tls.LoadX509KeyPair(nck.CertFile, nck.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--tls-sni-cert-key %s,%s: %w", nck.CertFile, nck.KeyFile, err))
		}
	}
	if v, err := cliflag.TLSVersion(s.Serving.MinTLSVersion); err != nil {
		errs = append(errs, fmt.Errorf("--tls-min-version: %w", err))
	} else if v < tls.VersionTLS12 {
		errs = append(errs, fmt.Errorf("--tls-min-version %s: TLS 1.2 or later is required", s.Serving.MinTLSVersion))
	}
	if _, err := cliflag.TLSCipherSuites(s.Serving.CipherSuites); err != nil {
		errs = append(errs, fmt.Errorf("--tls-cipher-suites: %w", err))
	}
	errs = append(errs, s.Authentication.Validate()...)
	errs = append(errs, s.Authorization.Validate()...)
	for _, f := range []struct{ flag, path string }{
		{"--client-ca-file", s.Authentication.ClientCert.ClientCA},
		{"--requestheader-client-ca-file", s.Authentication.RequestHeader.ClientCAFile},
	} {
		if f.path == "" {
			continue
		}
		if _, err := certutil.CertsFromFile(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", f.flag, f.path, err))
		}
	}
	for _, f := range []struct{ flag, path string }{
		{"--authentication-kubeconfig", s.Authentication.RemoteKubeConfigFile},
		{"--authorization-kubeconfig", s.Authorization.RemoteKubeConfigFile},
	} {
		if f.path == "" {
			continue
		}
		if _, err := clientcmd.BuildConfigFromFlags("", f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", f.flag, f.path, err))
		}
	}
	for _, ttl := range []struct {
		flag string
		v    time.Duration
	}{
		{"--authentication-token-webhook-cache-ttl", s.Authentication.CacheTTL},
		{"--authorization-webhook-cache-authorized-ttl", s.Authorization.AllowCacheTTL},
		{"--authorization-webhook-cache-unauthorized-ttl", s.Authorization.DenyCacheTTL},
	} {
		if ttl.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: must not be negative", ttl.flag, ttl.v))
		}
	}
	if _, err := path.NewAuthorizer(s.Authorization.AlwaysAllowPaths); err != nil {
		errs = append(errs, fmt.Errorf("--authorization-always-allow-paths: %w", err))
	}
	return errors.Join(errs...)
}

// Server is the running secure port.
type Server struct {
	addr    net.Addr
	stopped <-chan struct{}
}

// Addr is the bound address (the port resolved when 0 was asked for
// through a listener).
func (s *Server) Addr() net.Addr { return s.addr }

// Stopped is closed once the server has shut down after its context
// ended (requests in flight finished, or cut off after
// metrics.ShutdownTimeout).
func (s *Server) Stopped() <-chan struct{} { return s.stopped }

// Start validates the settings, binds the port (a busy one is an error
// naming --secure-port), sets up the certificate, the delegated
// authentication and authorization, and serves h behind them until ctx
// ends. kubeconfig is the API server serve talks to: TokenReviews and
// SubjectAccessReviews go there unless --authentication-kubeconfig or
// --authorization-kubeconfig names another; with none of them, the
// in-cluster configuration. Start may be called once.
func (s *SecureServing) Start(ctx context.Context, h http.Handler, kubeconfig string, log hclog.Logger) (*Server, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, nil
	}
	for _, kc := range []*string{&s.Authentication.RemoteKubeConfigFile, &s.Authorization.RemoteKubeConfigFile} {
		if *kc == "" {
			*kc = kubeconfig
		}
	}
	if s.Authentication.RemoteKubeConfigFile == "" || s.Authorization.RemoteKubeConfigFile == "" {
		if _, err := rest.InClusterConfig(); err != nil {
			log.Warn("secure port: no kubeconfig and not in a cluster: tokens cannot be reviewed nor requests authorized, so only the always-allowed paths answer, and --client-ca-file certificates of group system:masters",
				"error", err)
		}
	}
	if err := s.lookupClientCA(ctx, log); err != nil {
		return nil, err
	}
	if err := s.Serving.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return nil, fmt.Errorf("secure port: self-signed certificate: %w", err)
	}
	var info *server.SecureServingInfo
	port := s.Serving.BindPort // ApplyTo clears it when the bind fails
	if err := s.Serving.ApplyTo(&info); err != nil {
		return nil, fmt.Errorf("--secure-port %d on --bind-address %s: %w", port, s.Serving.BindAddress, err)
	}
	fail := func(err error) (*Server, error) {
		_ = info.Listener.Close()
		return nil, err
	}
	var authn server.AuthenticationInfo
	if err := s.Authentication.ApplyTo(&authn, info, nil); err != nil {
		return fail(fmt.Errorf("secure port: delegated authentication (--authentication-kubeconfig %q, --client-ca-file %q): %w",
			s.Authentication.RemoteKubeConfigFile, s.Authentication.ClientCert.ClientCA, err))
	}
	var authz server.AuthorizationInfo
	if err := s.Authorization.ApplyTo(&authz); err != nil {
		return fail(fmt.Errorf("secure port: delegated authorization (--authorization-kubeconfig %q): %w", s.Authorization.RemoteKubeConfigFile, err))
	}
	open, err := path.NewAuthorizer(s.Authorization.AlwaysAllowPaths)
	if err != nil {
		return fail(fmt.Errorf("--authorization-always-allow-paths: %w", err))
	}
	handler := chain(h, anonymousOnlyOn(open, authn.Authenticator), authz.Authorizer, authn.RequestHeaderConfig)
	stopped, _, err := info.Serve(handler, metrics.ShutdownTimeout, ctx.Done())
	if err != nil {
		return fail(fmt.Errorf("secure port: %w", err))
	}
	addr := info.Listener.Addr()
	log.Info("serving securely", "address", addr.String(),
		"certificate", certSource(s.Serving), "client_ca", clientCASource(s.Authentication),
		"authentication_kubeconfig", kubeconfigSource(s.Authentication.RemoteKubeConfigFile),
		"authorization_kubeconfig", kubeconfigSource(s.Authorization.RemoteKubeConfigFile),
		"always_allowed", s.Authorization.AlwaysAllowPaths)
	return &Server{addr: addr, stopped: stopped}, nil
}

// The ConfigMap in which the API server publishes the CA of the client
// certificates it trusts, and its key.
const (
	authConfigMapNamespace = "kube-system"
	authConfigMapName      = "extension-apiserver-authentication"
	clientCAKey            = "client-ca-file"
)

// lookupClientCA finds the client CA in the cluster when --client-ca-file
// is not given and --authentication-skip-lookup is not set: the
// client-ca-file of kube-system's extension-apiserver-authentication
// ConfigMap, followed as it changes. A failed lookup is logged and
// client certificates are then refused, unless
// --authentication-tolerate-lookup-failure=false makes it an error.
//
// It then turns k8s.io/apiserver's own lookup off: besides the client CA
// that reads the ConfigMap's requestheader-* keys, which trust the
// aggregator's front proxy to assert any identity in headers. A
// scheduler is never behind that proxy, so that trust would only widen
// who can claim an identity (and a cluster without a front proxy would
// log a missing key forever). --requestheader-client-ca-file still
// enables it deliberately.
func (s *SecureServing) lookupClientCA(ctx context.Context, log hclog.Logger) error {
	a := s.Authentication
	lookup := !a.SkipInClusterLookup && a.ClientCert.ClientCA == "" && a.ClientCert.CAContentProvider == nil
	a.SkipInClusterLookup = true
	if !lookup {
		return nil
	}
	where := authConfigMapNamespace + "/" + authConfigMapName
	fail := func(err error) error {
		if !a.TolerateInClusterLookupFailure {
			return fmt.Errorf("secure port: the client CA from ConfigMap %s (--authentication-tolerate-lookup-failure=false): %w", where, err)
		}
		log.Warn("secure port: client certificates are refused: no client CA (give --client-ca-file, or let the authentication kubeconfig read the ConfigMap)",
			"configmap", where, "error", err)
		return nil
	}
	rc, err := restConfig(a.RemoteKubeConfigFile)
	if err != nil {
		return fail(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fail(err)
	}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cm, err := client.CoreV1().ConfigMaps(authConfigMapNamespace).Get(gctx, authConfigMapName, metav1.GetOptions{})
	if err != nil {
		return fail(err)
	}
	if cm.Data[clientCAKey] == "" {
		return fail(fmt.Errorf("no %s in it: the API server runs without --client-ca-file", clientCAKey))
	}
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", authConfigMapNamespace, authConfigMapName, clientCAKey, client)
	if err != nil {
		return fail(err)
	}
	a.ClientCert.CAContentProvider = ca
	return nil
}

// restConfig loads kubeconfig, or the in-cluster configuration when it
// is empty.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return rest.InClusterConfig()
}

func certSource(s *options.SecureServingOptions) string {
	if f := s.ServerCert.CertKey.CertFile; f != "" {
		return f
	}
	return "self-signed, in memory"
}

func clientCASource(a *options.DelegatingAuthenticationOptions) string {
	switch {
	case a.ClientCert.ClientCA != "":
		return a.ClientCert.ClientCA
	case a.ClientCert.CAContentProvider != nil:
		return "ConfigMap " + authConfigMapNamespace + "/" + authConfigMapName
	}
	return "none"
}

func kubeconfigSource(path string) string {
	if path == "" {
		return "in-cluster"
	}
	return path
}

// chain puts h behind authentication and authorization, as
// kube-scheduler's handler chain does: outermost, panics become 500s and
// responses are not cached; the request is read as a non-resource one
// (every path a scheduler serves is a nonResourceURL); the identity is
// established (a failure answers 401); then the authorizer decides (a
// denial answers 403).
func chain(h http.Handler, authn authenticator.Request, authz authorizer.Authorizer, requestHeader *authenticatorfactory.RequestHeaderConfig) http.Handler {
	// No API prefixes: nothing here is an API resource.
	resolver := &apirequest.RequestInfoFactory{}
	h = genericapifilters.WithAuthorization(h, authz, scheme.Codecs)
	h = genericapifilters.WithAuthentication(h, authn, genericapifilters.Unauthorized(scheme.Codecs), nil, requestHeader)
	h = genericapifilters.WithRequestInfo(h, resolver)
	h = genericapifilters.WithCacheControl(h)
	return genericfilters.WithPanicRecovery(h, resolver)
}

// anonymousOnlyOn lets a request without credentials through only on
// the paths open allows (the always-allowed health paths), so that
// everywhere else it is answered 401 Unauthorized — the client must
// authenticate — rather than 403 for system:anonymous after a
// SubjectAccessReview. k8s.io/apiserver's delegating authenticator
// always accepts anonymous requests; this narrows it to where the
// authorizer would let them through anyway.
func anonymousOnlyOn(open authorizer.Authorizer, authn authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := authn.AuthenticateRequest(req)
		if err != nil || !ok || resp.User.GetName() != user.Anonymous {
			return resp, ok, err
		}
		d, _, _ := open.Authorize(req.Context(), authorizer.AttributesRecord{Path: req.URL.Path})
		if d == authorizer.DecisionAllow {
			return resp, ok, nil
		}
		return nil, false, nil
	})
}
