package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// versionInfo is what `wasmsched version` reports: enough to tell which
// scheduler, runtime and ABI a bug report is about, and the digests of the
// embedded modules so they can be audited or pinned.
type versionInfo struct {
	Version  string            `json:"version"`
	Revision string            `json:"revision,omitempty"`
	Modified bool              `json:"modified,omitempty"`
	Go       string            `json:"go"`
	Platform string            `json:"platform"`
	Wazero   string            `json:"wazero"`
	ABI      string            `json:"abi"`
	Builtins []modules.Builtin `json:"builtinModules"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Wazero: "unknown", ABI: fmt.Sprintf("v%d.%d", abi.VersionMajor, abi.VersionMinor), Builtins: modules.Builtins()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/tetratelabs/wazero" {
			v.Wazero = d.Version
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the binary, Go, wazero and ABI versions and the builtin modules' digests",
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
			rev := v.Revision
			if rev != "" && v.Modified {
				rev += " (modified)"
			}
			fmt.Fprintf(w, "wasmsched %s", v.Version)
			if rev != "" {
				fmt.Fprintf(w, " revision %s", rev)
			}
			fmt.Fprintf(w, "\ngo         %s %s\nwazero     %s\nabi        %s\n", v.Go, v.Platform, v.Wazero, v.ABI)
			for _, b := range v.Builtins {
				fmt.Fprintf(w, "module     %s  sha256:%s  %d bytes (builtin)\n", b.Name, b.SHA256, b.Size)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
