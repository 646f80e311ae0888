// Package pluginbuild builds a plugin project into a Wasm module, the way
// the project builds its own bundles: TinyGo with the project's target and
// flags (small, fast modules), or standard Go for wasip1 (no TinyGo needed,
// modules about 30 times larger). It exists so that a plugin author needs
// one command (`wasmsched plugin build`) instead of a target file, six
// flags and the right environment.
package pluginbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// Bounds of the files a build reads: the project's go.mod and the built
// module come from the command line (DIR, -o), env.sh from --tinygo-root.
const (
	maxGoModBytes = 1 << 20
	// maxModuleBytes is host/platform/modules' MaxModuleBytes (a test checks): a
	// larger module would not load, so describing it is an error too.
	maxModuleBytes = 64 << 20
	maxEnvShBytes  = 64 << 10
)

// TargetJSON is the TinyGo target every wasmsched module is built with:
// wasip1 with Debian's prebuilt wasi-libc and compiler-rt (TinyGo's module
// zip lacks their sources), the precise GC and no scheduler (the asyncify
// scheduler costs 0.2-0.5 ms per exported call). The Makefile uses this very
// file; a build writes it next to the TinyGo cache.
//
//go:embed wasip1-plugin.json
var TargetJSON []byte

// TinyGoFlags are the flags after -target: a reactor module (c-shared), no
// goroutine scheduler, no DWARF (small and byte-for-byte reproducible), and
// size optimisation.
var TinyGoFlags = []string{"-buildmode=c-shared", "-scheduler=none", "-no-debug", "-opt=s"}

// Toolchain says which compiler builds the module.
type Toolchain string

// The toolchains Build knows.
const (
	TinyGo Toolchain = "tinygo"
	Go     Toolchain = "go"
)

// Options say what to build and how.
type Options struct {
	// Dir is the plugin project (a Go module); Package is the main package
	// in it ("." by default).
	Dir, Package string
	// Output is the .wasm path; default: the last element of the module
	// path in go.mod plus ".wasm", in Dir (what `plugin init`'s config
	// names).
	Output string
	// Toolchain is TinyGo (default) or Go.
	Toolchain Toolchain
	// TinyGoRoot is where TinyGo is installed; default: $TINYGOROOT, else
	// /opt/tinygo (where scripts/install-tinygo.sh puts it).
	TinyGoRoot string
}

// Result describes a built module: what to paste into a config's modules
// entry.
type Result struct {
	Path   string
	Size   int64
	SHA256 string
}

// Build compiles the project and returns the module's path, size and
// sha256. Errors name the toolchain and carry the compiler's output.
func Build(ctx context.Context, o Options) (*Result, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	gomod, err := boundedread.ReadFile(filepath.Join(dir, "go.mod"), maxGoModBytes, boundedread.Regular, "a go.mod file")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a Go module (no go.mod): run `wasmsched plugin init` first", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("plugin project %s: %w", dir, err)
	}
	pkg := o.Package
	if pkg == "" {
		pkg = "."
	}
	out := o.Output
	if out == "" {
		out = filepath.Join(dir, moduleBase(gomod, filepath.Base(dir))+".wasm")
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	switch o.Toolchain {
	case TinyGo, "":
		if cmd, err = tinygoCommand(ctx, o.TinyGoRoot, pkg, out); err != nil {
			return nil, err
		}
	case Go:
		cmd = exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	default:
		return nil, fmt.Errorf("toolchain %q: want tinygo or go", o.Toolchain)
	}
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return Describe(out)
}

// moduleBase returns the last element of go.mod's module path, or def.
func moduleBase(gomod []byte, def string) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			if p := strings.Trim(strings.TrimSpace(rest), `"`); p != "" {
				return path.Base(p)
			}
		}
	}
	return def
}

// Describe returns a module file's size and sha256. The file must be a
// regular file the host would load (within maxModuleBytes): -o naming a
// device or a FIFO is refused rather than read for ever.
func Describe(path string) (*Result, error) {
	sum, size, err := boundedread.Sum256(path, maxModuleBytes, boundedread.Regular, "a Wasm module")
	if err != nil {
		return nil, fmt.Errorf("read built module: %w", err)
	}
	return &Result{Path: path, Size: size, SHA256: hex.EncodeToString(sum[:])}, nil
}

// tinygoCommand finds TinyGo, writes the target file, and returns the build
// command with the environment TinyGo needs (TINYGOROOT, and the Go 1.25
// standard library TinyGo 0.40 compiles against first on PATH).
func tinygoCommand(ctx context.Context, root, pkg, out string) (*exec.Cmd, error) {
	if root == "" {
		root = os.Getenv("TINYGOROOT")
	}
	if root == "" {
		root = "/opt/tinygo"
	}
	bin := filepath.Join(root, "build", "tinygo")
	if _, err := os.Stat(bin); err != nil {
		if p, lerr := exec.LookPath("tinygo"); lerr == nil {
			bin = p
		} else {
			return nil, fmt.Errorf("TinyGo not found in %s or on PATH: install it with scripts/install-tinygo.sh (`make tinygo`), or build with --toolchain go", root)
		}
	}
	target, err := writeTarget()
	if err != nil {
		return nil, err
	}
	args := append([]string{"build", "-target=" + target}, TinyGoFlags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.CommandContext(ctx, bin, args...)
	env := append(os.Environ(), "TINYGOROOT="+root)
	if goBin := goForTinyGo(root); goBin != "" {
		env = append(env, "PATH="+goBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd.Env = env
	return cmd, nil
}

// goForTinyGo reads the Go bin directory install-tinygo.sh recorded in
// env.sh (TinyGo 0.40 needs a Go <= 1.25 standard library); "" if none.
func goForTinyGo(root string) string {
	b, err := boundedread.ReadFile(filepath.Join(root, "env.sh"), maxEnvShBytes, boundedread.Regular, "TinyGo's env.sh")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export PATH=")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rest, string(os.PathListSeparator))
		if first != "" && !strings.Contains(first, "$") {
			return first
		}
	}
	return ""
}

// writeTarget writes TargetJSON into the user's cache directory under a
// name derived from its content, so concurrent builds share one file and a
// new binary never uses an old target.
func writeTarget() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256(TargetJSON)
	dir := filepath.Join(cache, "wasmsched")
	path := filepath.Join(dir, "tinygo-target-"+hex.EncodeToString(sum[:6])+".json")
	if b, err := boundedread.ReadFile(path, int64(len(TargetJSON)), boundedread.Regular, "the TinyGo target file"); err == nil && bytes.Equal(b, TargetJSON) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write TinyGo target: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "target-*.json")
	if err != nil {
		return "", fmt.Errorf("write TinyGo target: %w", err)
	}
	_, werr := tmp.Write(TargetJSON)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write TinyGo target: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write TinyGo target: %w", err)
	}
	return path, nil
}
