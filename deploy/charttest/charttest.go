// Package charttest runs the real helm on the chart for tests: the binary
// scripts/helm.sh builds from the Go module proxy, so the chart is checked
// by the tool that installs it, not by a reimplementation of its
// templates.
package charttest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmsched/wasmsched/deploy"
)

// RepoRoot is the repository's root directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("charttest: no caller information to find the repository")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Helm returns the path of the pinned helm. With CI=true it runs
// scripts/helm.sh, which builds helm the first time, and fails the test
// if that fails; otherwise it uses helm only if scripts/helm.sh has
// already built it (make chart, make e2e), and skips the test saying so
// — as make check-wasm does for TinyGo.
func Helm(t testing.TB) string {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "helm.sh")
	if os.Getenv("CI") == "true" {
		out, err := exec.Command(script).Output()
		if err != nil {
			t.Fatalf("scripts/helm.sh: %v\n%s", err, stderr(err))
		}
		return strings.TrimSpace(string(out))
	}
	cache := os.Getenv("WASMSCHED_HELM_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skipf("SKIPPED: no home directory for helm's cache: %v", err)
		}
		cache = filepath.Join(home, ".cache", "wasmsched", "helm")
	}
	version := os.Getenv("HELM_VERSION")
	if version == "" {
		version = pinnedVersion(t, script)
	}
	bin := filepath.Join(cache, version, "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("SKIPPED: helm %s not built (%s absent); run scripts/helm.sh or make chart", version, bin)
	}
	return bin
}

// pinnedVersion reads HELM_VERSION's default from scripts/helm.sh, the one
// place the version is pinned.
func pinnedVersion(t testing.TB, script string) string {
	t.Helper()
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "HELM_VERSION=${HELM_VERSION:-"); ok {
			return strings.TrimSuffix(v, "}")
		}
	}
	t.Fatalf("%s pins no HELM_VERSION", script)
	return ""
}

// Run runs helm with args in the repository root and returns its
// standard output; a failure is returned with helm's standard error.
func Run(t testing.TB, helm string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(helm, args...)
	cmd.Dir = RepoRoot(t)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return out, &helmError{args: args, err: err, stderr: errb.String()}
	}
	return out, nil
}

// Template renders the chart as deploy/wasmsched.yaml's release
// (wasmsched in kube-system) with values, and returns helm's output. Each
// of set is a --set value (key=value), or a helm flag passed as it is
// when it starts with "--" (--set-file=config=path, --values=file).
func Template(t testing.TB, helm string, set ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", deploy.ManifestRelease, deploy.ChartDir, "--namespace", deploy.ManifestNamespace}
	for _, s := range set {
		if strings.HasPrefix(s, "--") {
			args = append(args, s)
		} else {
			args = append(args, "--set", s)
		}
	}
	return Run(t, helm, args...)
}

// Objects renders the chart like Template and decodes it; a failure fails
// the test.
func Objects(t testing.TB, helm string, set ...string) []k8sruntime.Object {
	t.Helper()
	out, err := Template(t, helm, set...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.Decode(out)
	if err != nil {
		t.Fatalf("helm template %v: %v", set, err)
	}
	return objs
}

type helmError struct {
	args   []string
	err    error
	stderr string
}

func (e *helmError) Error() string {
	return "helm " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
