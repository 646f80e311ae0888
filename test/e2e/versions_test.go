package e2e

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/run/kube"
)

// wantK8SVersion is the release scripts/controlplane.sh runs: K8S_VERSION,
// or the script's own default.
func wantK8SVersion(t *testing.T) string {
	t.Helper()
	if v := os.Getenv("K8S_VERSION"); v != "" {
		return v
	}
	script, err := os.ReadFile("../../scripts/controlplane.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^K8S_VERSION=\$\{K8S_VERSION:-([0-9.]+)\}$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/controlplane.sh states no default K8S_VERSION")
	}
	return string(m[1])
}

// The suite runs against the release it was asked for (the default, or
// K8S_VERSION), and serve's start check accepts it without a warning:
// each supported release passes the check it will meet in a cluster.
func TestAPIServerReleaseIsSupported(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := "v" + wantK8SVersion(t)
	got, err := kube.CheckAPIServer(ctx, client.Discovery(), true)
	if err != nil {
		t.Fatalf("kube-apiserver %s refused: %v", want, err)
	}
	if got.Version != want {
		t.Errorf("the control plane runs kube-apiserver %s, want %s", got.Version, want)
	}
	if len(got.Warnings) != 0 {
		t.Errorf("kube-apiserver %s: warnings %q", got.Version, got.Warnings)
	}
	t.Logf("kube-apiserver %s passes serve's start check", got.Version)
}
