//go:build ignore

// regtool prepares and probes the test registry that scripts/registry.sh
// starts: a CA and a serving certificate for 127.0.0.1 and localhost, a
// bcrypt htpasswd file, the registry's config with a free loopback port,
// and a wait until the registry answers over TLS. It is built in
// registry.sh's throw-away module next to the registry, so a fresh
// machine needs neither openssl nor htpasswd.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	if len(os.Args) < 3 {
		fail("usage: regtool setup RUNDIR USER PASS | wait RUNDIR")
	}
	dir := os.Args[2]
	switch os.Args[1] {
	case "setup":
		if len(os.Args) != 5 {
			fail("usage: regtool setup RUNDIR USER PASS")
		}
		setup(dir, os.Args[3], os.Args[4])
	case "wait":
		wait(dir)
	default:
		fail("unknown command " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "regtool:", msg)
	os.Exit(1)
}

func check(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func writePEM(path, typ string, der []byte) {
	check(os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

func setup(dir, user, pass string) {
	check(os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(err)
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wasmsched-test-registry-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	check(err)
	caCert, err := x509.ParseCertificate(caDER)
	check(err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(err)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "registry"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &key.PublicKey, caKey)
	check(err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	check(err)
	writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER)
	writePEM(filepath.Join(dir, "server.crt"), "CERTIFICATE", srvDER)
	writePEM(filepath.Join(dir, "server.key"), "EC PRIVATE KEY", keyDER)
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.DefaultCost)
	check(err)
	check(os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(user+":"+string(hash)+"\n"), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: wasmsched-test
    path: %s
`, filepath.Join(dir, "data"), addr, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"), filepath.Join(dir, "htpasswd"))
	check(os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600))
	check(os.WriteFile(filepath.Join(dir, "addr"), []byte(addr+"\n"), 0o644))
}

// wait polls /v2/ until the registry answers (401 without credentials is
// an answer) or 30 s pass.
func wait(dir string) {
	addr, err := os.ReadFile(filepath.Join(dir, "addr"))
	check(err)
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	check(err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + string(addr[:len(addr)-1]) + "/v2/"
	for i := 0; i < 300; i++ {
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	fail("registry at " + url + " did not answer in 30s")
}
