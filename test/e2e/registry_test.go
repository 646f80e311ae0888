package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
)

// testRegistry is a CNCF distribution registry on loopback with TLS and
// basic auth, started by scripts/registry.sh (`make e2e` builds it).
type testRegistry struct {
	t      *testing.T
	script string
	run    string
	addr   string // host:port
	ca     string // its CA certificate
}

const regUser, regPass = "alice", "s3cret-pass"

func startRegistry(t *testing.T) *testRegistry {
	t.Helper()
	if os.Getenv("WASMSCHED_E2E") != "1" {
		t.Skip("set WASMSCHED_E2E=1 (make e2e) to run against a real registry")
	}
	script, err := filepath.Abs("../../scripts/registry.sh")
	if err != nil {
		t.Fatal(err)
	}
	r := &testRegistry{t: t, script: script, run: t.TempDir()}
	if out, err := exec.Command(script, "start", r.run, regUser, regPass).CombinedOutput(); err != nil {
		t.Fatalf("start the registry: %v\n%s", err, out)
	}
	t.Cleanup(r.stop)
	b, err := os.ReadFile(filepath.Join(r.run, "addr"))
	if err != nil {
		t.Fatal(err)
	}
	r.addr, r.ca = strings.TrimSpace(string(b)), filepath.Join(r.run, "ca.crt")
	return r
}

func (r *testRegistry) stop() { _ = exec.Command(r.script, "stop", r.run).Run() }

// dockerConfig writes a kubernetes.io/dockerconfigjson file for the
// registry with the given password.
func (r *testRegistry) dockerConfig(pass string) string {
	r.t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(regUser + ":" + pass))
	p := filepath.Join(r.t.TempDir(), ".dockerconfigjson")
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, r.addr, auth)), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// pushed is what `wasmsched plugin push` printed.
type pushed struct{ image, sha256 string }

var pushedLines = regexp.MustCompile(`(?m)^image: (\S+)\nsha256: ([0-9a-f]{64})$`)

// push publishes bin with `wasmsched plugin push` as repo:tag.
func (r *testRegistry) push(repo, tag string, bin []byte) pushed {
	r.t.Helper()
	f := filepath.Join(r.t.TempDir(), "module.wasm")
	if err := os.WriteFile(f, bin, 0o644); err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(wasmschedBinary(r.t), "plugin", "push", r.addr+"/"+repo+":"+tag, f,
		"--ca-file", r.ca, "--username", regUser, "--password-stdin")
	cmd.Stdin = strings.NewReader(regPass + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("plugin push: %v\n%s", err, out)
	}
	m := pushedLines.FindStringSubmatch(string(out))
	if m == nil {
		r.t.Fatalf("plugin push printed no image and sha256 lines:\n%s", out)
	}
	return pushed{image: m[1], sha256: m[2]}
}

// blobPath is where the registry's filesystem storage keeps a blob.
func (r *testRegistry) blobPath(hex string) string {
	return filepath.Join(r.run, "data", "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
}

// simulateWith runs `wasmsched simulate` on the example cluster with a
// configuration, the module cache in cache; it returns the output and
// the error.
func simulateWith(t *testing.T, cfg, cache string) (string, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wasmschedBinary(t), "simulate", "../../examples/cluster.yaml", "--config", p)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// imageConfig is a configuration whose default bundle comes from an image.
func imageConfig(image, sha, pullSecret, ca, extra string) string {
	return fmt.Sprintf(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: default
  image: %s
  sha256: %s
  pullSecret: %s
  caFile: %s
%sprofiles:
- schedulerName: default-scheduler
`, image, sha, pullSecret, ca, extra)
}

// TestModulesFromARealRegistry: the default bundle pushed with `plugin
// push` to a registry with TLS and basic auth, `simulate` run from its
// digest; then a wrong password, a tampered blob, and the registry gone,
// with and without the module cache.
func TestModulesFromARealRegistry(t *testing.T) {
	reg := startRegistry(t)
	def := reg.push("policies/default", "v1", dist.DefaultWasm)
	secret := reg.dockerConfig(regPass)
	cache := t.TempDir()
	cfg := imageConfig(def.image, def.sha256, secret, reg.ca, "")
	out, err := simulateWith(t, cfg, cache)
	if err != nil || !strings.Contains(out, "Scheduled") {
		t.Fatalf("simulate from %s: %v\n%s", def.image, err, out)
	}

	t.Run("wrong password", func(t *testing.T) {
		out, err := simulateWith(t, imageConfig(def.image, def.sha256, reg.dockerConfig("wrong"), reg.ca, ""), t.TempDir())
		if err == nil || !strings.Contains(out, "modules[0].image") || !strings.Contains(out, "401") {
			t.Fatalf("want a refusal naming modules[0].image and the 401, got %v\n%s", err, out)
		}
	})

	t.Run("tampered blob", func(t *testing.T) {
		zp := reg.push("policies/zonepicker", "v1", testwasm.GoBytes(t, testwasm.ZonePickerA))
		b, err := os.ReadFile(reg.blobPath(zp.sha256))
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(reg.blobPath(zp.sha256), b, 0o644); err != nil {
			t.Fatal(err)
		}
		extra := fmt.Sprintf("- name: zonepicker\n  image: %s\n  pullSecret: %s\n  caFile: %s\n", zp.image, secret, reg.ca)
		out, err := simulateWith(t, imageConfig(def.image, def.sha256, secret, reg.ca, extra), t.TempDir())
		if err == nil || !strings.Contains(out, "modules[1].image") || !strings.Contains(out, "does not match its digest") {
			t.Fatalf("want the tampered layer refused, got %v\n%s", err, out)
		}
		// FailOpen does not run it either: the simulation goes on without it.
		extra += "  failStrategy: FailOpen\n"
		out, err = simulateWith(t, imageConfig(def.image, def.sha256, secret, reg.ca, extra), t.TempDir())
		if err != nil || !strings.Contains(out, "Scheduled") || !strings.Contains(out, "FailOpen") {
			t.Fatalf("FailOpen with a tampered layer: %v\n%s", err, out)
		}
	})

	reg.stop()
	t.Run("registry unreachable, module cached", func(t *testing.T) {
		out, err := simulateWith(t, cfg, cache)
		if err != nil || !strings.Contains(out, "Scheduled") {
			t.Fatalf("simulate from the cache with the registry down: %v\n%s", err, out)
		}
	})
	t.Run("registry unreachable, nothing cached", func(t *testing.T) {
		out, err := simulateWith(t, cfg, t.TempDir())
		if err == nil || !strings.Contains(out, "modules[0].image") || !strings.Contains(out, "connection refused") {
			t.Fatalf("want a refusal naming modules[0].image and the refused connection, got %v\n%s", err, out)
		}
	})
}

// registryServeConfig scores nodes by the ZonePicker module from an image
// alone, so where a pod lands says which build placed it.
func registryServeConfig(image, pullPolicy, secret, ca string) string {
	return fmt.Sprintf(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: zonepicker
  image: %s
  pullPolicy: %s
  pullSecret: %s
  caFile: %s
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: ZonePicker
`, image, pullPolicy, secret, ca)
}

// TestServeFromARegistryFollowsAMovedTag: serve runs the zone-a build by
// digest; the configuration then names the tag with pullPolicy Always (a
// reload through the file watch); the tag is then moved to the zone-b
// build, which the module poll picks up while pods keep being scheduled.
func TestServeFromARegistryFollowsAMovedTag(t *testing.T) {
	reg := startRegistry(t)
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a := reg.push("policies/zonepicker", "stable", testwasm.GoBytes(t, testwasm.ZonePickerA))
	secret := reg.dockerConfig(regPass)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	write := func(s string) {
		// Written aside and renamed, as a ConfigMap update lands.
		tmp := cfgPath + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfgPath); err != nil {
			t.Fatal(err)
		}
	}
	write(registryServeConfig(a.image, "IfNotPresent", secret, reg.ca))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	createNode(t, ctx, client, zoneNode("node-a", "zone-a"))
	createNode(t, ctx, client, zoneNode("node-b", "zone-b"))
	promReg := prometheus.NewRegistry()
	met, err := metrics.New(promReg)
	if err != nil {
		t.Fatal(err)
	}
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: cfg, ConfigPath: cfgPath, Watch: true, Metrics: met,
		ModuleCacheDir: t.TempDir(), ModulePollInterval: 500 * time.Millisecond,
		Log: hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: testWriter{t}})})
	reloads := func() float64 {
		return testmetrics.Value(t, promReg, "wasmsched_config_reloads_total", testmetrics.Labels{"result": metrics.ReloadSuccess})
	}
	n := 0
	placeOne := func(want string) {
		t.Helper()
		n++
		name := fmt.Sprintf("p-%02d", n)
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod(name, "", "10m"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, name+" bound", func() bool { return boundTo(ctx, client, name) != "" })
		if got := boundTo(ctx, client, name); got != want {
			t.Fatalf("%s went to %s, want %s", name, got, want)
		}
	}
	placeOne("node-a")

	tag := a.image[:strings.Index(a.image, "@")] + ":stable"
	write(registryServeConfig(tag, "Always", secret, reg.ca))
	waitFor(t, ctx, "the reload to the tag", func() bool { return reloads() >= 2 })
	placeOne("node-a")

	b := reg.push("policies/zonepicker", "stable", testwasm.GoBytes(t, testwasm.ZonePickerB))
	if b.image == a.image {
		t.Fatal("the zone-b build has the zone-a digest")
	}
	waitFor(t, ctx, "the moved tag's reload", func() bool { return reloads() >= 3 })
	placeOne("node-b")
}

// TestServeFailOpenWithoutARegistry: a FailOpen module whose registry
// cannot be reached leaves serve running without its plugin, with a
// ModuleUnavailable Warning Event on serve's own Pod (the downward API's
// POD_NAME and POD_NAMESPACE), and pods scheduled by the rest.
func TestServeFailOpenWithoutARegistry(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Setenv("POD_NAME", "wasmsched-0")
	t.Setenv("POD_NAMESPACE", "default")
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	yaml := `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: zonepicker
  image: 127.0.0.1:1/policies/zonepicker@sha256:` + strings.Repeat("a", 64) + `
  failStrategy: FailOpen
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: ZonePicker
`
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	createNode(t, ctx, client, node("n1", "4"))
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: cfg, ConfigPath: cfgPath, ModuleCacheDir: t.TempDir(),
		Log: hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: testWriter{t}})})
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("p", "", "100m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "p bound without the unavailable module", func() bool { return boundTo(ctx, client, "p") == "n1" })
	waitFor(t, ctx, "a ModuleUnavailable Event on serve's Pod", func() bool {
		for _, ev := range events(ctx, client, "wasmsched-0") {
			if ev.Reason == "ModuleUnavailable" && ev.Type == "Warning" && strings.Contains(ev.Note, `module "zonepicker"`) {
				return true
			}
		}
		return false
	})
}
