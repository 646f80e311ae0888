package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// Version stamps the link step sets (-ldflags "-X main.version=..."), as
// the Makefile's build target and the Dockerfile do: go run, a build in a
// git worktree or with -buildvcs=false, and a Docker build without .git
// carry no VCS stamp in their build information. A stamp set here wins
// over the build information's.
var (
	version      string
	revision     string
	revisionTime string
	modified     string // "true" or "false"
)

// versionInfo is what `wasmsched version` reports: enough to tell which
// scheduler, runtime and ABI a bug report is about, and the digests of the
// embedded modules so they can be audited or pinned.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	// RevisionTime is the commit's time (RFC 3339).
	RevisionTime string `json:"revisionTime,omitempty"`
	Modified     bool   `json:"modified,omitempty"`
	Go           string `json:"go"`
	Platform     string `json:"platform"`
	Wazero       string `json:"wazero"`
	// Wasmtime is wasmtime-go's version in a binary built with it ("" in
	// a pure-Go build).
	Wasmtime string `json:"wasmtime,omitempty"`
	// Runtimes are the Wasm runtimes built in; DefaultRuntime is the one
	// serve and simulate run modules on unless --runtime or a module
	// entry names another: which one a bug report's numbers came from.
	Runtimes       []string          `json:"runtimes"`
	DefaultRuntime string            `json:"defaultRuntime"`
	ABI            string            `json:"abi"`
	Builtins       []modules.Builtin `json:"builtinModules"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Wazero: "unknown", ABI: fmt.Sprintf("v%d.%d", abi.VersionMajor, abi.VersionMinor), Builtins: modules.Builtins(),
		Runtimes: modules.Runtimes(), DefaultRuntime: modules.DefaultRuntime()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.fromBuildInfo(bi)
	}
	v.fromStamps(version, revision, revisionTime, modified)
	return v
}

// fromBuildInfo takes the module's version, wazero's, and the VCS stamp
// (vcs.revision, vcs.time, vcs.modified) go build records in a checkout.
func (v *versionInfo) fromBuildInfo(bi *debug.BuildInfo) {
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, d := range bi.Deps {
		switch {
		case d.Path == "github.com/tetratelabs/wazero":
			v.Wazero = d.Version
		case strings.HasPrefix(d.Path, "github.com/bytecodealliance/wasmtime-go") && slices.Contains(v.Runtimes, config.RuntimeWasmtime):
			v.Wasmtime = d.Version
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.RevisionTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
}

// fromStamps overrides what the link step set (empty: not set).
func (v *versionInfo) fromStamps(version, revision, revisionTime, modified string) {
	if version != "" {
		v.Version = version
	}
	if revision != "" {
		v.Revision = revision
	}
	if revisionTime != "" {
		v.RevisionTime = revisionTime
	}
	if modified != "" {
		v.Modified = modified == "true"
	}
}

// text is the version as `wasmsched version` and --version print it.
func (v versionInfo) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wasmsched %s", v.Version)
	switch {
	case v.Revision != "":
		fmt.Fprintf(&b, " revision %s", v.Revision)
		if v.RevisionTime != "" {
			fmt.Fprintf(&b, " (%s)", v.RevisionTime)
		}
		if v.Modified {
			b.WriteString(" modified")
		}
	case v.Version == "(devel)":
		b.WriteString(", revision unknown: built without a VCS stamp (go run, -buildvcs=false, a git worktree); make build stamps one")
	}
	fmt.Fprintf(&b, "\ngo         %s %s\nwazero     %s\n", v.Go, v.Platform, v.Wazero)
	if v.Wasmtime != "" {
		fmt.Fprintf(&b, "wasmtime   %s (wasmtime-go)\n", v.Wasmtime)
	}
	b.WriteString("runtimes  ")
	for _, n := range v.Runtimes {
		b.WriteString(" " + n)
		if n == v.DefaultRuntime {
			b.WriteString(" (default)")
		}
	}
	fmt.Fprintf(&b, "\nabi        %s\n", v.ABI)
	for _, m := range v.Builtins {
		fmt.Fprintf(&b, "module     %s  sha256:%s  %d bytes (builtin)\n", m.Name, m.SHA256, m.Size)
	}
	return b.String()
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the binary, Go, Wasm runtime and ABI versions, the runtimes built in and the default, and the builtin modules' digests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			case "text":
			default:
				return fmt.Errorf("-o: want text or json, not %q", output)
			}
			_, err := io.WriteString(w, v.text())
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
