package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"

	"github.com/wasmsched/wasmsched/host/config"
)

// wasmBytes is a tiny valid-looking module (header plus a marker).
func wasmBytes(marker string) []byte {
	return append([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, marker...)
}

// store is an in-memory registry whose fetches a test can break or
// tamper with.
type store struct {
	*memory.Store
	byDigest map[string]ocispec.Descriptor // what a registry resolves by digest
	down     bool
	tamper   bool
	pulls    int
}

func (s *store) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	if s.down {
		return nil, errors.New("connection refused")
	}
	s.pulls++
	rc, err := s.Store.Fetch(ctx, d)
	if err != nil || !s.tamper || d.MediaType != LayerMediaType {
		return rc, err
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	b[len(b)-1] ^= 1
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *store) Push(ctx context.Context, d ocispec.Descriptor, r io.Reader) error {
	if s.byDigest == nil {
		s.byDigest = map[string]ocispec.Descriptor{}
	}
	s.byDigest[d.Digest.String()] = d
	return s.Store.Push(ctx, d, r)
}

func (s *store) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	if s.down {
		return ocispec.Descriptor{}, errors.New("connection refused")
	}
	if d, ok := s.byDigest[ref]; ok {
		return d, nil
	}
	return s.Store.Resolve(ctx, ref)
}

func newFetcher(t *testing.T, s *store, cacheDir string) *Fetcher {
	return NewFetcher(FetcherOptions{CacheDir: cacheDir, MaxBytes: 1 << 20,
		Target: func(*config.ModuleSpec, config.ImageSource) (oras.ReadOnlyTarget, error) { return s, nil }})
}

const repo = "registry.example:5000/policies/mod"

func TestPushThenFetchByDigestAndFromCache(t *testing.T) {
	ctx := context.Background()
	s := &store{Store: memory.New()}
	bin := wasmBytes("one")
	p, err := Push(ctx, s, "v1", bin)
	if err != nil {
		t.Fatal(err)
	}
	if p.SHA256 != sha(bin) || !strings.HasPrefix(p.Manifest, "sha256:") {
		t.Fatalf("pushed %+v", p)
	}
	again, err := Push(ctx, s, "", bin)
	if err != nil || again != p {
		t.Fatalf("a second push of the same module gave %+v, %v; want the same digest %+v", again, err, p)
	}
	dir := t.TempDir()
	f := newFetcher(t, s, dir)
	spec := &config.ModuleSpec{Name: "m", Image: repo + "@" + p.Manifest}
	m, err := f.Fetch(ctx, spec)
	if err != nil || !bytes.Equal(m.Bytes, bin) || m.Cached || m.Manifest != p.Manifest {
		t.Fatalf("fetch: %+v, %v", m, err)
	}
	// Restart: a new fetcher on the same cache does not ask the registry,
	// which is down.
	s.down = true
	m, err = newFetcher(t, s, dir).Fetch(ctx, spec)
	if err != nil || !m.Cached || !bytes.Equal(m.Bytes, bin) {
		t.Fatalf("cached fetch: %+v, %v", m, err)
	}
	// Without a cache the outage is an error naming the image.
	if _, err := newFetcher(t, s, t.TempDir()).Fetch(ctx, spec); err == nil || !strings.Contains(err.Error(), spec.Image) {
		t.Fatalf("uncached fetch with the registry down: %v", err)
	}
}

func TestTagPinAndAlways(t *testing.T) {
	ctx := context.Background()
	s := &store{Store: memory.New()}
	one, two := wasmBytes("one"), wasmBytes("two")
	p1, _ := Push(ctx, s, "stable", one)
	dir := t.TempDir()
	f := newFetcher(t, s, dir)
	pinned := &config.ModuleSpec{Name: "m", Image: repo + ":stable", SHA256: p1.SHA256}
	if m, err := f.Fetch(ctx, pinned); err != nil || !bytes.Equal(m.Bytes, one) {
		t.Fatalf("pinned tag: %+v, %v", m, err)
	}
	// The tag moves: Always sees the new module; the pin refuses it.
	p2, _ := Push(ctx, s, "stable", two)
	always := &config.ModuleSpec{Name: "m", Image: repo + ":stable", PullPolicy: config.PullAlways}
	if m, err := f.Fetch(ctx, always); err != nil || !bytes.Equal(m.Bytes, two) || m.Manifest != p2.Manifest {
		t.Fatalf("moved tag, Always: %+v, %v", m, err)
	}
	if d, err := f.Resolve(ctx, always); err != nil || d != p2.Manifest {
		t.Fatalf("resolve: %s, %v", d, err)
	}
	pinnedAlways := *pinned
	pinnedAlways.PullPolicy = config.PullAlways
	_, err := f.Fetch(ctx, &pinnedAlways)
	var verr *VerifyError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "pins "+p1.SHA256) {
		t.Fatalf("moved tag against its pin: %v", err)
	}
	// IfNotPresent with the pin cached answers from the cache.
	if m, err := f.Fetch(ctx, pinned); err != nil || !m.Cached || !bytes.Equal(m.Bytes, one) {
		t.Fatalf("pinned tag from the cache: %+v, %v", m, err)
	}
	// Always with the registry down: pinned content falls back to the
	// cache, an unpinned tag does not.
	s.down = true
	if m, err := f.Fetch(ctx, &pinnedAlways); err != nil || !m.Cached {
		t.Fatalf("Always, registry down, pinned: %+v, %v", m, err)
	}
	if _, err := f.Fetch(ctx, always); err == nil {
		t.Fatal("Always, registry down, unpinned: no error")
	}
	never := &config.ModuleSpec{Name: "m", Image: repo + "@" + p2.Manifest, PullPolicy: config.PullNever}
	if _, err := newFetcher(t, s, t.TempDir()).Fetch(ctx, never); err == nil || !strings.Contains(err.Error(), "Never") {
		t.Fatalf("Never, not cached: %v", err)
	}
}

func TestTamperedLayerIsRefusedAndNotCached(t *testing.T) {
	ctx := context.Background()
	s := &store{Store: memory.New(), tamper: true}
	p, _ := Push(ctx, s, "", wasmBytes("one"))
	dir := t.TempDir()
	spec := &config.ModuleSpec{Name: "m", Image: repo + "@" + p.Manifest}
	_, err := newFetcher(t, s, dir).Fetch(ctx, spec)
	var verr *VerifyError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("tampered layer: %v", err)
	}
	s.tamper, s.down = false, true
	if _, err := newFetcher(t, s, dir).Fetch(ctx, spec); err == nil {
		t.Fatal("the tampered pull left something in the cache that answers")
	}
}

func TestWrongDigestIsNotFound(t *testing.T) {
	ctx := context.Background()
	s := &store{Store: memory.New()}
	Push(ctx, s, "", wasmBytes("one"))
	spec := &config.ModuleSpec{Name: "m", Image: repo + "@sha256:" + strings.Repeat("0", 64)}
	if _, err := newFetcher(t, s, "").Fetch(ctx, spec); err == nil {
		t.Fatal("an unknown digest was fetched")
	}
}

func TestCorruptedCacheEntryIsAMiss(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(dir)
	b := wasmBytes("x")
	if err := c.Put(b); err != nil {
		t.Fatal(err)
	}
	d := content.NewDescriptorFromBytes("", b).Digest
	if got, ok := c.Get(d, 1<<20); !ok || !bytes.Equal(got, b) {
		t.Fatal("cache miss after put")
	}
	p, _ := c.path(d)
	if err := writeFile(p, wasmBytes("y")); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(d, 1<<20); ok {
		t.Fatal("a corrupted cache entry was returned")
	}
	if _, ok := c.Get(d, 2); ok {
		t.Fatal("an entry over the bound was returned")
	}
}

// pushImage pushes a manifest with the given layers (media type and
// content) and returns its digest.
func pushImage(t *testing.T, s oras.Target, mediaType string, layers map[string][]byte) string {
	t.Helper()
	ctx := context.Background()
	cfgB := []byte("{}")
	cfg := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, cfgB)
	s.Push(ctx, cfg, bytes.NewReader(cfgB))
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: mediaType, Config: cfg}
	for mt, b := range layers {
		d := content.NewDescriptorFromBytes(mt, b)
		s.Push(ctx, d, bytes.NewReader(b))
		m.Layers = append(m.Layers, d)
	}
	mb, _ := json.Marshal(m)
	md := content.NewDescriptorFromBytes(mediaType, mb)
	if err := s.Push(ctx, md, bytes.NewReader(mb)); err != nil {
		t.Fatal(err)
	}
	return md.Digest.String()
}

func tarOf(t *testing.T, gz bool, files map[string][]byte) []byte {
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for name, b := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

func TestLayoutVariants(t *testing.T) {
	ctx := context.Background()
	bin := wasmBytes("v")
	cases := []struct {
		name, mt string
		layers   map[string][]byte
		want     string // error substring; "" for success
	}{
		{"solo layer", ocispec.MediaTypeImageManifest, map[string][]byte{"application/vnd.module.wasm.content.layer.v1+wasm": bin}, ""},
		{"compat layer", ocispec.MediaTypeImageManifest, map[string][]byte{"application/vnd.wasm.content.layer.v1+wasm": bin}, ""},
		{"image tar.gz", ocispec.MediaTypeImageManifest, map[string][]byte{ocispec.MediaTypeImageLayerGzip: tarOf(t, true, map[string][]byte{"plugin.wasm": bin})}, ""},
		{"docker tar", "application/vnd.docker.distribution.manifest.v2+json", map[string][]byte{"application/vnd.docker.image.rootfs.diff.tar": tarOf(t, false, map[string][]byte{"x/policy.wasm": bin, "README": []byte("r")})}, ""},
		{"tar without wasm", ocispec.MediaTypeImageManifest, map[string][]byte{ocispec.MediaTypeImageLayer: tarOf(t, false, map[string][]byte{"README": []byte("r")})}, "no .wasm file"},
		{"not wasm", ocispec.MediaTypeImageManifest, map[string][]byte{LayerMediaType: []byte("hello")}, "not a Wasm binary"},
		{"other layer", ocispec.MediaTypeImageManifest, map[string][]byte{"text/plain": bin}, "no Wasm layer"},
		{"no layers", ocispec.MediaTypeImageManifest, nil, "no layers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &store{Store: memory.New()}
			d := pushImage(t, s, c.mt, c.layers)
			m, err := newFetcher(t, s, t.TempDir()).Fetch(ctx, &config.ModuleSpec{Name: "m", Image: repo + "@" + d})
			if c.want == "" {
				if err != nil || !bytes.Equal(m.Bytes, bin) {
					t.Fatalf("%+v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestIndexIsRefused(t *testing.T) {
	_, _, err := moduleLayer([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`))
	if err == nil || !strings.Contains(err.Error(), "index") {
		t.Fatalf("index: %v", err)
	}
}

func FuzzModuleLayer(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"layers":[{"mediaType":"application/wasm","digest":"sha256:` + strings.Repeat("a", 64) + `","size":3}]}`))
	f.Add([]byte(`{"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		moduleLayer(b)
	})
}

func FuzzExtractTar(f *testing.F) {
	f.Add(tarOf(nil, true, map[string][]byte{"plugin.wasm": wasmBytes("a")}))
	f.Add(tarOf(nil, false, map[string][]byte{"a.wasm": wasmBytes("a"), "b.wasm": wasmBytes("b")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if bin, err := moduleFromLayer(b, true, 1<<16); err == nil && len(bin) > 1<<16 {
			t.Fatalf("%d bytes extracted over the bound", len(bin))
		}
	})
}
