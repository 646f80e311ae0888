package scaffold

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

func TestSDKArchiveIsCurrent(t *testing.T) {
	root, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildSDKArchive(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, SDKArchive) {
		t.Fatal("host/tools/scaffold/sdk.zip no longer matches abi/ and guest-sdk/: run `go generate ./host/tools/scaffold` and commit it")
	}
}

func TestInitWritesAProjectWhoseTestsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a project")
	}
	dir := filepath.Join(t.TempDir(), "gpu-pool")
	files, err := Init(Options{Name: "gpu-pool", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go.mod", "plugin.go", "plugin_test.go", "module_test.go", "wasmsched.yaml", "cluster.yaml", "README.md"} {
		if !contains(files, want) {
			t.Errorf("Init wrote %v, missing %s", files, want)
		}
	}
	for _, f := range []string{"abi/go.mod", "guest-sdk/go.mod", "guest-sdk/plugintest/run.go", "guest-sdk/guest/exports_wasm.go"} {
		if _, err := os.Stat(filepath.Join(dir, SDKDir, f)); err != nil {
			t.Errorf("SDK copy: %v", err)
		}
	}
	src, _ := os.ReadFile(filepath.Join(dir, "plugin.go"))
	if !strings.Contains(string(src), "type GpuPool struct") {
		t.Errorf("plugin.go does not define the plugin type GpuPool")
	}
	// Offline: the project must need nothing from a module proxy.
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "WASMSCHED=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in the scaffolded project: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok ") {
		t.Fatalf("go test ran no package:\n%s", out)
	}
}

// Every kind's project builds and its unit tests pass, offline; its
// configuration reads back with the plugin where the kind belongs.
func TestInitWritesEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a project per kind")
	}
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my-policy")
			files, err := Init(Options{Name: "my-policy", Dir: dir, Kind: kind})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"README.md", "cluster.yaml", "go.mod", "module_test.go", "plugin.go", "plugin_test.go", "wasmsched.yaml"}
			if !slices.Equal(files, want) {
				t.Errorf("Init wrote %v, want %v", files, want)
			}
			b, err := os.ReadFile(filepath.Join(dir, "wasmsched.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(b)
			if err != nil {
				t.Fatalf("wasmsched.yaml does not parse: %v\n%s", err, b)
			}
			if !strings.Contains(string(b), "MyPolicy") || len(cfg.Modules) != 1 {
				t.Errorf("wasmsched.yaml does not load the module and name MyPolicy:\n%s", b)
			}
			for _, f := range []string{"plugin.go", "plugin_test.go", "module_test.go"} {
				src, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if out, err := format.Source(src); err != nil || !bytes.Equal(out, src) {
					t.Errorf("%s is not gofmt-clean (%v)", f, err)
				}
			}
			cmd := exec.Command("go", "vet", "./...")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "WASMSCHED=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go vet in the scaffolded project: %v\n%s", err, out)
			}
			cmd = exec.Command("go", "test", "-count=1", "./...")
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "WASMSCHED=")
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok ") {
				t.Fatalf("go test in the scaffolded project: %v\n%s", err, out)
			}
		})
	}
}

func TestInitRefusesAnUnknownKind(t *testing.T) {
	_, err := Init(Options{Name: "x", Dir: t.TempDir(), Kind: "preemption"})
	if err == nil || !strings.Contains(err.Error(), `plugin kind "preemption"`) || !strings.Contains(err.Error(), "vpod-priority") {
		t.Fatalf("err = %v, want a plugin kind error listing the kinds", err)
	}
}

func TestInitRefusesBadNamesAndBusyDirectories(t *testing.T) {
	for _, name := range []string{"", "Upper", "1abc", "a/b", "../x", strings.Repeat("a", 64)} {
		if _, err := Init(Options{Name: name, Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "plugin name") {
			t.Errorf("name %q: err %v, want a plugin name error", name, err)
		}
	}
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(Options{Name: "x", Dir: busy}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("busy directory: err %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(busy, "keep.txt")); string(b) != "mine" {
		t.Fatal("Init touched a file in a non-empty directory")
	}
}

func TestUpdateSDKRewritesOnlyTheCopy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	if _, err := Init(Options{Name: "p", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, SDKDir, "abi", "stale.go")
	if err := os.WriteFile(stale, []byte("package abi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.go"), []byte("package main // edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(Options{Name: "p", Dir: dir, UpdateSDK: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("a file the SDK no longer has survived --update-sdk")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "plugin.go")); string(b) != "package main // edited\n" {
		t.Error("--update-sdk rewrote the author's plugin.go")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
