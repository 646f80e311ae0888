package oci

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// VerifyError is content that is not what the reference or the pin
// says: a manifest or layer whose digest differs, or a module whose
// sha256 differs from the entry's pin. It never runs, and the cache is
// not consulted in its place.
type VerifyError struct{ Msg string }

func (e *VerifyError) Error() string { return e.Msg }

// Access is how to reach a registry: credentials and TLS.
type Access struct {
	// PullSecret is a kubernetes.io/dockerconfigjson file ("" for
	// anonymous access).
	PullSecret string
	// CAFile is a PEM bundle of extra CAs ("" for the system's only).
	CAFile string
	// PlainHTTP talks HTTP instead of HTTPS (tests with in-process
	// registries only: no configuration field sets it).
	PlainHTTP bool
	// Username and Password, if set, are used instead of PullSecret
	// (`wasmsched plugin push --username`).
	Username, Password string
}

// Timeout bounds one registry request; a registry that hangs must not
// hold a scheduler's start or reload for long.
const Timeout = 30 * time.Second

// Repository returns the remote repository of src, with access's
// credentials and TLS.
func Repository(src config.ImageSource, access Access) (*remote.Repository, error) {
	repo, err := remote.NewRepository(src.Registry + "/" + src.Repository)
	if err != nil {
		return nil, err
	}
	repo.PlainHTTP = access.PlainHTTP
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if access.CAFile != "" {
		pem, err := boundedread.ReadFile(access.CAFile, 1<<20, boundedread.Regular, "a CA bundle")
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile: %s holds no PEM certificate", access.CAFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	client := &auth.Client{Client: &http.Client{Transport: tr, Timeout: Timeout}, Cache: auth.NewCache()}
	client.SetUserAgent("wasmsched")
	switch {
	case access.Username != "":
		client.Credential = auth.StaticCredential(src.Registry, auth.Credential{Username: access.Username, Password: access.Password})
	case access.PullSecret != "":
		b, err := boundedread.ReadFile(access.PullSecret, 1<<20, boundedread.Regular, "a dockerconfigjson file")
		if err != nil {
			return nil, fmt.Errorf("pullSecret: %w", err)
		}
		store, err := credentials.NewMemoryStoreFromDockerConfig(b)
		if err != nil {
			return nil, fmt.Errorf("pullSecret: %s is not a kubernetes.io/dockerconfigjson file: %w", access.PullSecret, err)
		}
		client.Credential = credentials.Credential(store)
	}
	repo.Client = client
	return repo, nil
}

// Fetcher pulls modules for module entries, through its cache.
type Fetcher struct {
	cache *Cache
	max   int64
	log   hclog.Logger
	// target opens the repository of an entry; tests replace it with an
	// in-memory store.
	target func(m *config.ModuleSpec, src config.ImageSource) (oras.ReadOnlyTarget, error)
}

// FetcherOptions configure a Fetcher.
type FetcherOptions struct {
	// CacheDir holds pulled content; "" caches nothing.
	CacheDir string
	// MaxBytes bounds a module (modules.MaxModuleBytes).
	MaxBytes int64
	Log      hclog.Logger
	// Target, if set, opens an entry's repository instead of the remote
	// one (tests; embedders with their own store).
	Target func(m *config.ModuleSpec, src config.ImageSource) (oras.ReadOnlyTarget, error)
}

// NewFetcher returns a fetcher.
func NewFetcher(o FetcherOptions) *Fetcher {
	f := &Fetcher{cache: NewCache(o.CacheDir), max: o.MaxBytes, log: o.Log, target: o.Target}
	if f.log == nil {
		f.log = hclog.NewNullLogger()
	}
	if f.target == nil {
		f.target = func(m *config.ModuleSpec, src config.ImageSource) (oras.ReadOnlyTarget, error) {
			return Repository(src, Access{PullSecret: m.PullSecret, CAFile: m.CAFile})
		}
	}
	return f
}

// Module is a module pulled (or found in the cache).
type Module struct {
	Bytes []byte
	// SHA256 is the hex sha256 of Bytes, what a pin compares.
	SHA256 string
	// Manifest is the digest of the manifest it came from ("" when the
	// cache answered by the pin alone).
	Manifest string
	// Cached says the cache answered and the registry was not asked.
	Cached bool
}

// Fetch returns the module of an entry with an image, following its pull
// policy: IfNotPresent answers from the cache when it holds the digest
// (or the pinned module), Always asks the registry and falls back to the
// cache only for pinned content when the registry cannot be reached,
// Never uses the cache only. Content that fails verification is a
// *VerifyError.
func (f *Fetcher) Fetch(ctx context.Context, m *config.ModuleSpec) (*Module, error) {
	src, err := config.ParseImage(m.Image)
	if err != nil {
		return nil, err
	}
	policy := m.EffectivePullPolicy()
	if policy != config.PullAlways {
		if mod, ok := f.cached(src, m.SHA256); ok {
			return mod, nil
		}
		if policy == config.PullNever {
			return nil, fmt.Errorf("%s is not in the module cache and pullPolicy is Never", m.Image)
		}
	}
	mod, err := f.pull(ctx, m, src)
	var verr *VerifyError
	if err != nil && !errors.As(err, &verr) && policy == config.PullAlways {
		if cached, ok := f.cached(src, m.SHA256); ok {
			f.log.Warn("registry unreachable; using the cached module its digest or pin names", "image", m.Image, "error", err)
			return cached, nil
		}
	}
	return mod, err
}

// Resolve asks the registry which manifest digest an entry's reference
// names now: for polling a tag.
func (f *Fetcher) Resolve(ctx context.Context, m *config.ModuleSpec) (string, error) {
	src, err := config.ParseImage(m.Image)
	if err != nil {
		return "", err
	}
	if src.Digest != "" {
		return src.Digest, nil
	}
	t, err := f.target(m, src)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.Image, err)
	}
	desc, err := t.Resolve(ctx, src.Tag)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", m.Image, err)
	}
	return desc.Digest.String(), nil
}

// cached returns the module from the cache: by the manifest digest, else
// by the sha256 pin.
func (f *Fetcher) cached(src config.ImageSource, pin string) (*Module, bool) {
	if src.Digest != "" {
		mb, ok := f.cache.Get(digest.Digest(src.Digest), MaxManifestBytes)
		if !ok {
			return nil, false
		}
		layer, isTar, err := moduleLayer(mb)
		if err != nil {
			return nil, false
		}
		lb, ok := f.cache.Get(layer.Digest, f.max)
		if !ok {
			return nil, false
		}
		bin, err := moduleFromLayer(lb, isTar, f.max)
		if err != nil {
			return nil, false
		}
		sum := sha(bin)
		if pin != "" && !strings.EqualFold(pin, sum) {
			return nil, false
		}
		return &Module{Bytes: bin, SHA256: sum, Manifest: src.Digest, Cached: true}, true
	}
	if pin == "" {
		return nil, false
	}
	bin, ok := f.cache.Get(digest.NewDigestFromEncoded(digest.SHA256, strings.ToLower(pin)), f.max)
	if !ok {
		return nil, false
	}
	return &Module{Bytes: bin, SHA256: sha(bin), Cached: true}, true
}

// pull fetches the module from the registry, verifying the manifest and
// layer digests and the pin, and caches what it fetched.
func (f *Fetcher) pull(ctx context.Context, m *config.ModuleSpec, src config.ImageSource) (*Module, error) {
	t, err := f.target(m, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Image, err)
	}
	ref := src.Digest
	if ref == "" {
		ref = src.Tag
	}
	desc, err := t.Resolve(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", m.Image, err)
	}
	if src.Digest != "" && desc.Digest.String() != src.Digest {
		return nil, &VerifyError{fmt.Sprintf("pull %s: the registry answered with manifest %s", m.Image, desc.Digest)}
	}
	mb, err := fetchBlob(ctx, t, desc, MaxManifestBytes, "manifest")
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", m.Image, err)
	}
	if !manifestTypes[desc.MediaType] && !indexTypes[desc.MediaType] && desc.MediaType != "" {
		return nil, fmt.Errorf("pull %s: the reference names a %s, not an image manifest", m.Image, desc.MediaType)
	}
	layer, isTar, err := moduleLayer(mb)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", m.Image, err)
	}
	limit := f.max
	if isTar {
		limit = 2 * f.max // a tar's headers and padding on top of the module
	}
	lb, err := fetchBlob(ctx, t, layer, limit, "layer")
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", m.Image, err)
	}
	bin, err := moduleFromLayer(lb, isTar, f.max)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", m.Image, err)
	}
	sum := sha(bin)
	if m.SHA256 != "" && !strings.EqualFold(m.SHA256, sum) {
		return nil, &VerifyError{fmt.Sprintf("pull %s: the module has sha256 %s, but the configuration pins %s", m.Image, sum, m.SHA256)}
	}
	for _, b := range [][]byte{mb, lb, bin} {
		if err := f.cache.Put(b); err != nil {
			f.log.Warn("could not cache a pulled module; the next start pulls it again", "image", m.Image, "error", err)
			break
		}
	}
	return &Module{Bytes: bin, SHA256: sum, Manifest: desc.Digest.String()}, nil
}

// fetchBlob fetches one blob of at most max bytes and verifies its size
// and digest.
func fetchBlob(ctx context.Context, t oras.ReadOnlyTarget, desc ocispec.Descriptor, max int64, what string) ([]byte, error) {
	if desc.Size < 0 || desc.Size > max {
		return nil, fmt.Errorf("the %s is %d bytes, over the %d-byte limit", what, desc.Size, max)
	}
	if err := desc.Digest.Validate(); err != nil {
		return nil, &VerifyError{fmt.Sprintf("the %s's digest %q is not valid: %v", what, desc.Digest, err)}
	}
	rc, err := t.Fetch(ctx, desc)
	if err != nil {
		return nil, fmt.Errorf("fetch the %s %s: %w", what, desc.Digest, err)
	}
	defer rc.Close()
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) {
			return nil, &VerifyError{fmt.Sprintf("the %s %s does not match its digest (%v): refused", what, desc.Digest, err)}
		}
		return nil, fmt.Errorf("read the %s %s: %w", what, desc.Digest, err)
	}
	return b, nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
