package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

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
	def := modules.DefaultRuntime() + " (default)"
	for _, want := range []string{"wasmsched ", "go1.", "wazero     v1.", "abi        v1.", "sha256:" + b.SHA256, "runtimes   ", def} {
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

// The version names the commit when the build has a VCS stamp (go build in
// a checkout) or the link step set one (make build); without either it
// says the revision is unknown and how to get one, not a bare "(devel)".
func TestVersionNamesTheCommit(t *testing.T) {
	var v versionInfo
	v.Version = "(devel)"
	v.fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-28T09:00:00Z"}, {Key: "vcs.modified", Value: "true"}}})
	if first := strings.SplitN(v.text(), "\n", 2)[0]; first != "wasmsched (devel) revision abc123 (2026-11-28T09:00:00Z) modified" {
		t.Errorf("from build info: %q", first)
	}
	v.fromStamps("v0.3.0", "def456", "2026-11-28T10:00:00Z", "false")
	if first := strings.SplitN(v.text(), "\n", 2)[0]; first != "wasmsched v0.3.0 revision def456 (2026-11-28T10:00:00Z)" {
		t.Errorf("from link stamps: %q", first)
	}
	bare := versionInfo{Version: "(devel)"}
	if first := strings.SplitN(bare.text(), "\n", 2)[0]; !strings.Contains(first, "revision unknown") || !strings.Contains(first, "make build") {
		t.Errorf("without a stamp: %q", first)
	}
}

// --version prints what version does; -v is kube-scheduler's verbosity,
// and a -v without a number says so and where the version is.
func TestVersionFlagAndBareV(t *testing.T) {
	want, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run(t, "--version"); err != nil || got != want {
		t.Errorf("--version: %v\n%s\nwant\n%s", err, got, want)
	}
	for _, args := range [][]string{{"-v"}, {"simulate", "-v"}, {"--v"}} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "log verbosity") || !strings.Contains(err.Error(), "--version") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// A word that is no command fails (exit 1) at every level that groups
// commands, with the closest commands and where the list is.
func TestUnknownSubcommandsFailWithAHint(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulte"}, `unknown command "simulte" for "wasmsched"; did you mean simulate? ("wasmsched --help" lists the commands)`},
		{[]string{"foo"}, `unknown command "foo" for "wasmsched" ("wasmsched --help" lists the commands)`},
		{[]string{"plugin", "biuld"}, `unknown command "biuld" for "wasmsched plugin"; did you mean build? ("wasmsched plugin --help" lists the commands)`},
	} {
		if _, err := run(t, c.args...); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %s", c.args, err, c.want)
		}
	}
	if out, err := run(t, "plugin"); err != nil || !strings.Contains(out, "Available Commands") {
		t.Errorf("plugin alone: %v\n%s", err, out)
	}
}

// No flag's help shows two defaults: a flag whose usage names its default
// in words does not also print pflag's "(default ...)".
func TestNoFlagShowsTwoDefaults(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

// A command given too few or too many arguments names what is missing
// (or the one too many) and prints its usage line.
func TestPositionalArgumentsAreNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"plugin", "push"}, []string{"wasmsched plugin push needs REGISTRY/REPO[:TAG] and FILE.wasm: missing REGISTRY/REPO[:TAG] and FILE.wasm", "usage: wasmsched plugin push REGISTRY/REPO[:TAG] FILE.wasm"}},
		{[]string{"plugin", "push", "localhost:5000/m:v1"}, []string{"missing FILE.wasm ("}},
		{[]string{"plugin", "pull"}, []string{"wasmsched plugin pull needs IMAGE: missing IMAGE", "usage: wasmsched plugin pull REGISTRY/REPO@sha256:DIGEST|REGISTRY/REPO:TAG -o FILE.wasm"}},
		{[]string{"plugin", "init"}, []string{"wasmsched plugin init needs NAME: missing NAME"}},
		{[]string{"plugin", "init", "a", "b"}, []string{`takes at most 1 argument(s), got 2: "b" is one too many`}},
		{[]string{"plugin", "build", "a", "b"}, []string{`takes at most 1 argument(s), got 2: "b" is one too many`, "usage: wasmsched plugin build [DIR]"}},
	} {
		_, err := run(t, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v, want it to contain %q", c.args, err, w)
			}
		}
	}
}

// TestRuntimeFlag: serve's and simulate's --runtime defaults to the
// fastest runtime the binary has; one it lacks, or an unknown one, is an
// error naming the flag before anything starts.
func TestRuntimeFlag(t *testing.T) {
	has := map[string]bool{}
	for _, n := range modules.Runtimes() {
		has[n] = true
	}
	if want := map[bool]string{true: "wasmtime", false: "wazero"}[has["wasmtime"]]; modules.DefaultRuntime() != want {
		t.Errorf("DefaultRuntime() = %q in a binary with %v; want %q", modules.DefaultRuntime(), modules.Runtimes(), want)
	}
	for cmd, args := range map[string][]string{"serve": nil, "simulate": {"x.yaml"}} {
		out, _ := run(t, cmd, "--help")
		if !strings.Contains(out, "--runtime string") || !strings.Contains(out, `(default "`+modules.DefaultRuntime()+`")`) {
			t.Errorf("%s --help does not show --runtime defaulting to %s:\n%s", cmd, modules.DefaultRuntime(), out)
		}
		_, err := run(t, append([]string{cmd, "--runtime", "v8"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), `--runtime: unknown runtime "v8"`) {
			t.Errorf("%s --runtime v8: err = %v", cmd, err)
		}
		if !has["wasmtime"] {
			_, err := run(t, append([]string{cmd, "--runtime", "wasmtime"}, args...)...)
			if err == nil || !strings.Contains(err.Error(), "--runtime: this wasmsched binary was built without the wasmtime runtime") {
				t.Errorf("%s --runtime wasmtime without wasmtime: err = %v", cmd, err)
			}
		}
	}
	example := filepath.Join("..", "..", "examples", "cluster.yaml")
	for _, rt := range modules.Runtimes() {
		out, err := run(t, "simulate", "--runtime", rt, example)
		if err != nil || !strings.Contains(out, "Scheduled") {
			t.Errorf("simulate --runtime %s: %v\n%s", rt, err, out)
		}
	}
}
