// Package firsthour checks a plugin author's first hour as the README
// tells it: the commands between the README's first-hour markers are run,
// verbatim, in an empty directory with the wasmsched binary built from this
// tree on PATH; then the module they built is loaded into the host
// in-process and must place the pods the same way.
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

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "wasmsched"), "./cmd/wasmsched")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build wasmsched: %v\n%s", err, out)
	}

	work := t.TempDir()
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
		t.Fatalf("README first-hour commands failed: %v\n%s\n%s", err, script, out.String())
	}
	text := out.String()
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
	verbose.Dir, verbose.Env = project, sh.Env
	if out, err := verbose.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestBuiltModuleInSimulate") {
		t.Errorf("the project's module test did not pass (or skipped): %v\n%s", err, out)
	}

	// The same module, loaded by the host in-process.
	mod, err := pluginbuild.Describe(filepath.Join(project, "gpu-pool.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if mod.Size >= 64_000 {
		t.Errorf("a one-plugin Filter+Score module is %d bytes; the budget is under 64 KB (docs/ABI.md, What a module pays for)", mod.Size)
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
