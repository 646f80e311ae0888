package modules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/oci"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
)

const testRepo = "registry.example:5000/policies/default"

// registryFetcher is a fetcher on an in-memory registry holding the
// default bundle under the tag "v1"; down makes every request fail.
func registryFetcher(t *testing.T, down *bool) (*oci.Fetcher, oci.Pushed) {
	t.Helper()
	s := memory.New()
	p, err := oci.Push(context.Background(), s, "v1", dist.DefaultWasm)
	if err != nil {
		t.Fatal(err)
	}
	f := oci.NewFetcher(oci.FetcherOptions{CacheDir: t.TempDir(), MaxBytes: MaxModuleBytes,
		Target: func(*config.ModuleSpec, config.ImageSource) (oras.ReadOnlyTarget, error) {
			if *down {
				return nil, errors.New("dial tcp: connection refused")
			}
			return s, nil
		}})
	return f, p
}

func TestModuleFromImageReplacesTheBuiltin(t *testing.T) {
	down := false
	f, p := registryFetcher(t, &down)
	cfg := config.Default()
	cfg.Modules = []config.ModuleSpec{{Name: config.BuiltinDefaultModule, Image: testRepo + ":v1", SHA256: p.SHA256}}
	r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Fetcher: f})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	m := r.PluginModule("NodeResourcesFit")
	if m == nil || m.Config.Image == "" || m.SHA256 != p.SHA256 || m.ImageManifest != p.Manifest {
		t.Fatalf("module %+v", m)
	}
	// Pulled once: the registry down, the pinned module comes from the cache.
	down = true
	r2, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Fetcher: f})
	if err != nil {
		t.Fatalf("load from the cache with the registry down: %v", err)
	}
	r2.Close(context.Background())
}

func TestFailStrategy(t *testing.T) {
	down := true
	f, p := registryFetcher(t, &down)
	mod := config.ModuleSpec{Name: "extra", Image: testRepo + "@" + p.Manifest}
	cfg := config.Default()
	cfg.Modules = []config.ModuleSpec{mod}
	_, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Fetcher: f})
	var fe *FetchError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "modules[0].image: "+mod.Image) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("FailClose: %v", err)
	}

	reg := prometheus.NewRegistry()
	met, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Modules[0].FailStrategy = config.FailOpen
	r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Fetcher: f, Metrics: met})
	if err != nil {
		t.Fatalf("FailOpen: %v", err)
	}
	defer r.Close(context.Background())
	if u := r.Unavailable(); len(u) != 1 || u[0].Module != "extra" || u[0].Field != "modules[0]" {
		t.Fatalf("unavailable %+v", u)
	}
	if len(r.UnavailableIn("profiles[0]")) != 1 {
		t.Fatal("a global FailOpen module is not unavailable in a profile")
	}
	if r.PluginModule("NodeResourcesFit") == nil {
		t.Fatal("the builtin bundle is not served next to an unavailable module")
	}
	if got := testmetrics.Value(t, reg, "wasmsched_module_fetch_failures_total", testmetrics.Labels{"module": "extra"}); got != 1 {
		t.Fatalf("fetch failures = %v, want 1", got)
	}

	// A digest mismatch is refused whatever the strategy says... and
	// with FailOpen the module does not run either.
	down = false
	cfg.Modules[0] = config.ModuleSpec{Name: config.BuiltinDefaultModule, Image: testRepo + ":v1", SHA256: strings.Repeat("0", 64)}
	_, err = Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Fetcher: f})
	var ve *oci.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("pin mismatch: %v", err)
	}
}
