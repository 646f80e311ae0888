package kube

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/wasmsched/wasmsched/host/config"
)

// A configuration with an eviction section and no profiles serves: the
// informers sync, the eviction coordinator runs, no pod is scheduled by
// a profile, and it stops cleanly.
func TestServeWithoutProfiles(t *testing.T) {
	cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n" +
		"eviction:\n  syncPeriod: 1s\n  policies:\n  - plugin: ResourceOvercommit\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Client: fake.NewSimpleClientset(), Config: cfg, CacheDir: t.TempDir(), Ready: ready})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Serve ended before it was ready: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // one eviction round
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
}
