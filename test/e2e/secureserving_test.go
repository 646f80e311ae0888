package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestSecureServingThroughTheAPIServer runs `wasmsched serve` as
// deploy/wasmsched.yaml's ServiceAccount (a token minted with the
// TokenRequest API, the manifest's RBAC applied) with its secure port on
// loopback, and checks what a cluster would see: /healthz, /livez and
// /readyz answer anyone; /metrics answers 401 without credentials, 403
// to a ServiceAccount token without RBAC, 200 to one bound to a
// ClusterRole with nonResourceURLs ["/metrics"] (which still may not get
// /configz); a client certificate of the cluster's CA (found in the
// extension-apiserver-authentication ConfigMap, as in a cluster) is
// accepted and one from another CA refused; the review decisions are
// cached (the API server's audit log shows one TokenReview and one
// SubjectAccessReview for several scrapes); and /configz follows a hot
// reload.
func TestSecureServingThroughTheAPIServer(t *testing.T) {
	t.Setenv("WASMSCHED_AUDIT", "1")
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applyDeploy(t, ctx, admin)
	createNode(t, ctx, admin, node("n1", "4"))
	base, cfgPath := startServeBinary(t, ctx, admin, kubeconfig)
	anyone := httpsClient()

	// The self-signed certificate kept in memory: for localhost and
	// 127.0.0.1, TLS 1.2 or later.
	code, body, state := fetch(anyone, base+"/healthz", "")
	if code != http.StatusOK {
		t.Errorf("/healthz without credentials = %d %s, want 200", code, body)
	}
	if state == nil || state.Version < tls.VersionTLS12 || len(state.PeerCertificates) == 0 ||
		!slices.Contains(state.PeerCertificates[0].DNSNames, "localhost") || !slices.ContainsFunc(state.PeerCertificates[0].IPAddresses, net.IP.IsLoopback) {
		t.Errorf("TLS: %+v, want 1.2 or later with a certificate for localhost and 127.0.0.1", state)
	}
	if code, body, _ := fetch(anyone, base+"/livez", ""); code != http.StatusOK {
		t.Errorf("/livez without credentials = %d %s, want 200", code, body)
	}
	if code, body, _ := fetch(anyone, base+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials = %d %s, want 401", code, body)
	}

	// ServiceAccounts in default: one without RBAC, one allowed /metrics.
	for _, sa := range []string{"nobody", "scraper"} {
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "scrape-wasmsched"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scrape-wasmsched"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "scrape-wasmsched"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nobody, scraper := mintToken(t, ctx, admin, "default", "nobody"), mintToken(t, ctx, admin, "default", "scraper")
	if code, body, _ := fetch(anyone, base+"/metrics", nobody); code != http.StatusForbidden ||
		!strings.Contains(body, `system:serviceaccount:default:nobody\" cannot get path \"/metrics\"`) {
		t.Errorf("/metrics with a token without RBAC = %d %s, want 403", code, body)
	}
	auditLog := filepath.Join(filepath.Dir(kubeconfig), "audit.log")
	reviewsBefore := reviews(t, auditLog)
	for i := 0; i < 5; i++ {
		code, body, _ := fetch(anyone, base+"/metrics", scraper)
		if code != http.StatusOK || !strings.Contains(body, "scheduler_pending_pods") || !strings.Contains(body, "wasmsched_config_reloads_total") {
			t.Fatalf("/metrics with the scraper's token = %d, want 200 with the scheduler's metrics:\n%.2000s", code, body)
		}
	}
	if code, body, _ := fetch(anyone, base+"/configz", scraper); code != http.StatusForbidden {
		t.Errorf("/configz with the scraper's token (granted /metrics only) = %d %s, want 403", code, body)
	}
	// Five scrapes and one /configz: one TokenReview (the token's answer
	// is cached), two SubjectAccessReviews (one per path; /metrics's
	// answer cached), all made by the wasmsched ServiceAccount.
	after := reviews(t, auditLog)
	if tr, sar := after["tokenreviews"]-reviewsBefore["tokenreviews"], after["subjectaccessreviews"]-reviewsBefore["subjectaccessreviews"]; tr != 1 || sar != 2 {
		t.Errorf("5 scrapes and a /configz cost %d TokenReviews and %d SubjectAccessReviews as the ServiceAccount, want 1 and 2 (cached)", tr, sar)
	}

	// Client certificates: the cluster's CA (from the ConfigMap) is
	// trusted, another is not.
	pki := filepath.Join(filepath.Dir(kubeconfig), "pki")
	adminCert, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	withCert := httpsClient(adminCert)
	if code, body, _ := fetch(withCert, base+"/configz", ""); code != http.StatusOK || !strings.Contains(body, `"componentconfig"`) || !strings.Contains(body, `"wasmsched"`) {
		t.Errorf("/configz with the cluster CA's system:masters certificate = %d %s, want 200 with the configuration", code, body)
	}
	if code, body, _ := fetch(httpsClient(foreignCert(t, "admin", "system:masters")), base+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a certificate from another CA = %d %s, want 401", code, body)
	}

	// /configz follows a hot reload (a profile's plugin arguments change).
	tmp := cfgPath + ".tmp"
	const reloaded = wasmschedProfile + "  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n" +
		"        resources:\n        - {name: cpu, weight: 1}\n"
	if err := os.WriteFile(tmp, []byte(reloaded), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfgPath); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "/configz to show the reloaded configuration", func() bool {
		_, body, _ := fetch(withCert, base+"/configz", "")
		return strings.Contains(body, `"MostAllocated"`)
	})
}

// httpsClient trusts any server certificate (serve's is self-signed)
// and presents certs.
func httpsClient(certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}} //nolint:gosec // a self-signed certificate
}

// fetch GETs url with a bearer token (if any) and returns the status,
// the body and the TLS state (status 0 and the error if it failed).
func fetch(c *http.Client, url, token string) (int, string, *tls.ConnectionState) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error(), nil
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.TLS
}

// mintToken asks the TokenRequest API for a token of a ServiceAccount.
func mintToken(t *testing.T, ctx context.Context, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	ttl := int64(3600)
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// tokenKubeconfig writes, at path, the admin kubeconfig's cluster with a
// minted token of the ServiceAccount ns/name as its user: serve then
// runs as a pod with that ServiceAccount would.
func tokenKubeconfig(t *testing.T, ctx context.Context, admin kubernetes.Interface, adminKubeconfig, ns, name, path string) string {
	t.Helper()
	return writeTokenKubeconfig(t, adminKubeconfig, mintToken(t, ctx, admin, ns, name), path)
}

// writeTokenKubeconfig writes, at path, the admin kubeconfig's cluster
// with token as the user of every context.
func writeTokenKubeconfig(t *testing.T, adminKubeconfig, token, path string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc.AuthInfos = map[string]*clientcmdapi.AuthInfo{"token": {Token: token}}
	for _, c := range kc.Contexts {
		c.AuthInfo = "token"
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// foreignCert is a client certificate for cn in groups orgs, signed by a
// CA the cluster does not know.
func foreignCert(t *testing.T, cn string, orgs ...string) tls.Certificate {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-the-cluster-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// reviews counts the TokenReviews and SubjectAccessReviews the wasmsched
// ServiceAccount created, from the API server's audit log.
func reviews(t *testing.T, auditLog string) map[string]int {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb string `json:"verb"`
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource string `json:"resource"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Verb == "create" && ev.User.Username == "system:serviceaccount:kube-system:wasmsched" {
			out[ev.ObjectRef.Resource]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	return out
}

// wasmschedProfile is the configuration startServeBinary starts with:
// one profile, schedulerName wasmsched.
const wasmschedProfile = "apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\nprofiles:\n- schedulerName: wasmsched\n"

// startServeBinary runs the built `wasmsched serve` as
// deploy/wasmsched.yaml's ServiceAccount (a token kubeconfig; the caller
// applied the manifest) with a one-profile configuration (schedulerName
// wasmsched) and its secure port on loopback, plus args, and waits until
// /readyz answers 200 without credentials. It returns the secure port's
// base URL and the configuration's path (for a hot reload). The process
// is killed when the test ends; its log is printed if the test failed.
func startServeBinary(t *testing.T, ctx context.Context, admin kubernetes.Interface, kubeconfig string, args ...string) (base, cfgPath string) {
	t.Helper()
	dir := t.TempDir()
	saKubeconfig := tokenKubeconfig(t, ctx, admin, kubeconfig, "kube-system", "wasmsched", filepath.Join(dir, "wasmsched.kubeconfig"))
	cfgPath = filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(wasmschedProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freeAddr(t)[len("127.0.0.1:"):]
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wasmschedBinary(t), append([]string{"serve", "--kubeconfig", saKubeconfig, "--config", cfgPath,
		"--wasm-cache-dir", t.TempDir(), "--leader-elect=false", "--log-level", "info",
		"--bind-address", "127.0.0.1", "--secure-port", port}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("serve log:\n%s", b)
		}
	})
	base = "https://127.0.0.1:" + port
	waitFor(t, ctx, "/readyz to answer 200 without credentials", func() bool {
		code, _, _ := fetch(httpsClient(), base+"/readyz", "")
		return code == http.StatusOK
	})
	return base, cfgPath
}
