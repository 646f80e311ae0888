// Package firsthour checks a plugin author's first hour as the README
// tells it: the commands between the README's first-hour markers are run,
// verbatim, in an empty directory with the wasmsched binary built from this
// tree on PATH; then the module they built is loaded into the host
// in-process and must place the pods the same way. Each other kind of
// plugin (eviction, vpod predicate and priority, victim) has its own
// walk-through, run the same way.
package firsthour

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wasmsched/wasmsched/host/tools/pluginbuild"
	"github.com/wasmsched/wasmsched/host/tools/wasmtest"
)

const (
	beginMarker = "<!-- first-hour:begin -->"
	endMarker   = "<!-- first-hour:end -->"
	maxCommands = 5
)

// readmeCommands returns the shell commands of the README's first-hour
// block: its non-blank lines, comments stripped.
func readmeCommands(t *testing.T, root string) []string {
	return readmeBlock(t, root, beginMarker, endMarker)
}

// readmeBlock returns the shell commands of the README's block between
// beginMarker and endMarker.
func readmeBlock(t *testing.T, root, beginMarker, endMarker string) []string {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s ... %s block", beginMarker, endMarker)
	}
	block := s[i+len(beginMarker) : j]
	fence := regexp.MustCompile("(?s)```sh\n(.*?)```")
	m := fence.FindStringSubmatch(block)
	if m == nil {
		t.Fatal("the README's first-hour block has no ```sh fence")
	}
	var cmds []string
	for _, line := range strings.Split(m[1], "\n") {
		if k := strings.Index(line, " #"); k >= 0 {
			line = line[:k]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

func TestREADMEFirstHour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a TinyGo module")
	}
	if _, err := os.Stat("/opt/tinygo/build/tinygo"); err != nil && os.Getenv("TINYGOROOT") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but TinyGo is not installed (make check-wasm installs it)")
		}
		t.Skip("TinyGo not installed (make tinygo); the first-hour walk-through builds a TinyGo module")
	}
	root, err := filepath.Abs("../..") // the repository root, above test/firsthour
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(t, root)
	if len(cmds) > maxCommands {
		t.Fatalf("the README's first hour takes %d commands, more than %d: %q", len(cmds), maxCommands, cmds)
	}

	work := t.TempDir()
	text, env := runScript(t, root, work, cmds)
	for _, want := range []string{"built gpu-pool.wasm with tinygo", "ok  \texample.com/gpu-pool"} {
		if !strings.Contains(text, want) {
			t.Errorf("first-hour output lacks %q:\n%s", want, text)
		}
	}
	placed := regexp.MustCompile(`default/web-b\s+default-scheduler\s+pool-b-1\s+Scheduled`)
	if !placed.MatchString(text) {
		t.Errorf("simulate did not place web-b on pool-b-1 with the new plugin:\n%s", text)
	}
	if !strings.Contains(text, "didn't match the pod's example.com/pool") {
		t.Errorf("simulate did not report the plugin's reason for web-c:\n%s", text)
	}

	// The project's module test must have run the built module, not
	// skipped: ask go test to say so.
	project := filepath.Join(work, "gpu-pool")
	verbose := exec.Command("go", "test", "-count=1", "-v", "-run", "TestBuiltModuleInSimulate", ".")
	verbose.Dir, verbose.Env = project, env
	if out, err := verbose.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestBuiltModuleInSimulate") {
		t.Errorf("the project's module test did not pass (or skipped): %v\n%s", err, out)
	}

	// The same module, loaded by the host in-process.
	mod, err := pluginbuild.Describe(filepath.Join(project, "gpu-pool.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	// The budget of plugins-wasm/examples/sizecheck, the same shape of
	// module (docs/ABI.md, "What a module pays for").
	if mod.Size >= 64_500 {
		t.Errorf("a one-plugin Filter+Score module is %d bytes; the budget is under 64,500 (docs/ABI.md, What a module pays for)", mod.Size)
	}
	// The size the README states is the size it builds to (within 2%).
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	stated := regexp.MustCompile(`(?s)The module ` + "`plugin init`" + ` writes.{0,200}?\(([0-9,]+)\s+bytes\)`).FindSubmatch(readme)
	if stated == nil {
		t.Fatal("README.md no longer states the size of the module plugin init writes, as \"(N bytes)\"")
	}
	if n, err := strconv.Atoi(strings.ReplaceAll(string(stated[1]), ",", "")); err != nil || math.Abs(float64(mod.Size)-float64(n)) > 0.02*float64(n) {
		t.Errorf("README.md says the module plugin init writes is %s bytes; it built to %d", stated[1], mod.Size)
	}
	rep := wasmtest.Simulate(t, filepath.Join(project, "wasmsched.yaml"), filepath.Join(project, "cluster.yaml"))
	for pod, node := range map[string]string{"web-b": "pool-b-1", "web-a": "pool-a-1"} {
		if p := rep.Pod("default", pod); p == nil || p.Node != node {
			t.Errorf("in-process: %s placed as %+v, want %s", pod, p, node)
		}
	}
	if p := rep.Pod("default", "web-c"); p == nil || p.Status != "Unschedulable" {
		t.Errorf("in-process: web-c placed as %+v, want Unschedulable", p)
	}
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
	binOut  []byte
)

// wasmschedBinary builds the wasmsched binary from this tree once for
// every walk-through, into a directory removed when the tests end
// (TestMain).
func wasmschedBinary(t *testing.T, root string) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "firsthour-bin-")
		if binErr != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(binDir, "wasmsched"), "./cmd/wasmsched")
		build.Dir = root
		binOut, binErr = build.CombinedOutput()
	})
	if binErr != nil {
		t.Fatalf("build wasmsched: %v\n%s", binErr, binOut)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// runScript runs cmds in work as one bash script with the wasmsched
// binary on PATH, offline, and returns their output and environment.
func runScript(t *testing.T, root, work string, cmds []string) (string, []string) {
	t.Helper()
	bin := wasmschedBinary(t, root)
	script := "set -euo pipefail\n" + strings.Join(cmds, "\n") + "\n"
	sh := exec.Command("bash", "-c", script)
	sh.Dir = work
	// Offline: nothing may come from a module proxy. WASMSCHED points the
	// module test at the binary even where PATH lookups differ.
	sh.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOPROXY=off", "GOFLAGS=-mod=mod", "WASMSCHED="+filepath.Join(bin, "wasmsched"))
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	if err := sh.Run(); err != nil {
		t.Fatalf("README commands failed: %v\n%s\n%s", err, script, out.String())
	}
	return out.String(), sh.Env
}

// kindWalkthroughs are the README's walk-throughs of the other plugin
// kinds: the project each writes and what its simulate must print.
var kindWalkthroughs = []struct {
	kind, project string
	want          []*regexp.Regexp
}{
	{"eviction", "pod-cap", []*regexp.Regexp{
		regexp.MustCompile(`1\s+default/batch-1\s+busy-1\s+PodCap\s+pods\s+evicted`),
		regexp.MustCompile(`2\s+default/batch-2\s+busy-1\s+PodCap\s+pods\s+evicted`),
	}},
	{"vpod-predicate", "headroom", []*regexp.Regexp{
		regexp.MustCompile(`default/orders\s+10\s+0\s+adapter-0=6 adapter-1=4\s`),
	}},
	{"vpod-priority", "most-free", []*regexp.Regexp{
		regexp.MustCompile(`default/orders\s+6\s+0\s+adapter-2=6\s`),
	}},
	{"victim", "protect-labeled", []*regexp.Regexp{
		regexp.MustCompile(`default/urgent\s+default/batch\s+node-1\s+delete`),
		regexp.MustCompile(`default/nightly\s+-\s+node-1\s+Bound`),
	}},
}

// TestREADMEKinds runs the README's walk-through of each other plugin
// kind verbatim, offline, and checks that simulate shows the plugin at
// work and that the project's module test ran the built module.
func TestREADMEKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a TinyGo module per kind")
	}
	if _, err := os.Stat("/opt/tinygo/build/tinygo"); err != nil && os.Getenv("TINYGOROOT") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but TinyGo is not installed (make check-wasm installs it)")
		}
		t.Skip("TinyGo not installed (make tinygo); the walk-throughs build TinyGo modules")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range kindWalkthroughs {
		t.Run(w.kind, func(t *testing.T) {
			cmds := readmeBlock(t, root, "<!-- first-hour:"+w.kind+":begin -->", "<!-- first-hour:"+w.kind+":end -->")
			if len(cmds) > maxCommands {
				t.Fatalf("the README's %s walk-through takes %d commands, more than %d: %q", w.kind, len(cmds), maxCommands, cmds)
			}
			if len(cmds) == 0 || !strings.Contains(cmds[0], "--kind "+w.kind+" "+w.project) {
				t.Fatalf("the README's %s walk-through does not start with plugin init --kind %s %s: %q", w.kind, w.kind, w.project, cmds)
			}
			work := t.TempDir()
			text, env := runScript(t, root, work, cmds)
			for _, want := range []string{"built " + w.project + ".wasm with tinygo", "ok  \texample.com/" + w.project} {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
			for _, re := range w.want {
				if !re.MatchString(text) {
					t.Errorf("simulate did not print %s:\n%s", re, text)
				}
			}
			verbose := exec.Command("go", "test", "-count=1", "-v", "-run", "TestBuiltModuleInSimulate", ".")
			verbose.Dir, verbose.Env = filepath.Join(work, w.project), env
			if out, err := verbose.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestBuiltModuleInSimulate") {
				t.Errorf("the project's module test did not pass (or skipped): %v\n%s", err, out)
			}
		})
	}
}
