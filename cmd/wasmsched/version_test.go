package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/platform/modules"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestVersionNamesRuntimeABIAndBuiltinDigests(t *testing.T) {
	out, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	b := modules.Builtins()[0]
	for _, want := range []string{"wasmsched ", "go1.", "wazero     v1.", "abi        v1.", "sha256:" + b.SHA256} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	if out, err := run(t, "version", "-o", "json"); err != nil || !strings.Contains(out, `"builtinModules"`) {
		t.Errorf("version -o json: %v\n%s", err, out)
	}
}

func TestLogLevelAndVerbosity(t *testing.T) {
	for _, c := range []struct {
		level string
		v     int
		want  hclog.Level
	}{
		{"warn", 0, hclog.Warn},
		{"warn", 2, hclog.Info},
		{"warn", 4, hclog.Debug},
		{"warn", 9, hclog.Trace},
		{"debug", 1, hclog.Debug}, // the more verbose wins
		{"ERROR", 0, hclog.Error},
	} {
		got, err := logLevelOf(c.level, c.v)
		if err != nil || got != c.want {
			t.Errorf("--log-level %s --v %d = %v, %v; want %v", c.level, c.v, got, err, c.want)
		}
	}
	if _, err := run(t, "--log-level", "loud", "version"); err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Errorf("unknown log level: err %v", err)
	}
	if _, err := run(t, "-v", "-1", "version"); err == nil {
		t.Error("negative verbosity accepted")
	}
	if _, err := run(t, "-v", "4", "version"); err != nil {
		t.Errorf("-v 4: %v", err)
	}
}

func TestPluginInitAndBuildRefusals(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "plugin", "init", "demo", "--dir", dir)
	if err != nil || !strings.Contains(out, "plugin.go") {
		t.Fatalf("plugin init: %v\n%s", err, out)
	}
	if _, err := run(t, "plugin", "init", "demo", "--dir", dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("plugin init into a used directory: %v", err)
	}
	if _, err := run(t, "plugin", "init", "demo", "--dir", t.TempDir(), "--kind", "preemption"); err == nil || !strings.Contains(err.Error(), `plugin kind "preemption"`) {
		t.Errorf("plugin init --kind preemption: %v", err)
	}
	evict := t.TempDir()
	if out, err := run(t, "plugin", "init", "demo", "--dir", evict, "--kind", "eviction"); err != nil || !strings.Contains(out, "plugin_test.go") {
		t.Errorf("plugin init --kind eviction: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(evict, "plugin.go")); !strings.Contains(string(b), "plugin.ThresholdPlugin") {
		t.Errorf("plugin init --kind eviction wrote no eviction policy:\n%s", b)
	}
	if _, err := run(t, "plugin", "build", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no go.mod") {
		t.Errorf("plugin build outside a project: %v", err)
	}
	if _, err := run(t, "plugin", "build", dir, "--toolchain", "rust"); err == nil || !strings.Contains(err.Error(), "want tinygo or go") {
		t.Errorf("plugin build --toolchain rust: %v", err)
	}
	t.Setenv("PATH", t.TempDir()) // no tinygo on PATH either
	if _, err := run(t, "plugin", "build", dir, "--tinygo-root", t.TempDir()); err == nil || !strings.Contains(err.Error(), "TinyGo not found") {
		t.Errorf("plugin build with no TinyGo: %v", err)
	}
}
