package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wasmsched/wasmsched/host/tools/pluginbuild"
	"github.com/wasmsched/wasmsched/host/tools/scaffold"
)

func newPluginCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Write, build, try and publish your own policy plugins",
	}
	cmd.AddCommand(newPluginInitCommand(), newPluginBuildCommand(), newPluginPushCommand(), newPluginPullCommand())
	return cmd
}

func newPluginInitCommand() *cobra.Command {
	var (
		o    scaffold.Options
		kind string
	)
	cmd := &cobra.Command{
		Use:   "init NAME",
		Short: "Write a ready plugin project (plugin, tests, config, a cluster to try it on)",
		Long: `init writes a plugin project into ./NAME (or --dir): a go.mod wired to a copy
of the guest SDK this binary carries (nothing is downloaded), a plugin of
the --kind asked for, unit tests using guest-sdk/plugintest, a test that runs
the built module in the real scheduler, a configuration enabling the plugin
and a small cluster manifest on which simulate shows it at work. Kinds:

  filter-score    a Filter and a Score for a scheduling profile (default)
  eviction        an eviction policy (a threshold and the pods to evict)
  vpod-predicate  a vpod predicate for a Knative-style vpod scheduler
  vpod-priority   a vpod priority for a Knative-style vpod scheduler
  victim          a preemption victim policy (which pods, which node)

Then, in the project:

  go test ./...
  wasmsched plugin build
  wasmsched simulate cluster.yaml --config wasmsched.yaml`,
		Args: positional([]string{"NAME"}),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name, o.Kind = args[0], scaffold.Kind(kind)
			files, err := scaffold.Init(o)
			if err != nil {
				return err
			}
			dir := o.Dir
			if dir == "" {
				dir = o.Name
			}
			w := cmd.OutOrStdout()
			if o.UpdateSDK {
				fmt.Fprintf(w, "updated %s in %s\n", scaffold.SDKDir, dir)
				return nil
			}
			fmt.Fprintf(w, "wrote %s in %s (SDK copy in %s)\n", strings.Join(files, ", "), dir, scaffold.SDKDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "directory to write (default ./NAME); must be empty or absent")
	cmd.Flags().StringVar(&kind, "kind", string(scaffold.KindFilterScore), "what the plugin is: filter-score, eviction, vpod-predicate, vpod-priority or victim")
	cmd.Flags().StringVar(&o.Module, "module", "", "Go module path (default example.com/NAME)")
	cmd.Flags().BoolVar(&o.UpdateSDK, "update-sdk", false, "only refresh the project's SDK copy from this binary")
	return cmd
}

func newPluginBuildCommand() *cobra.Command {
	var (
		o         pluginbuild.Options
		toolchain string
	)
	cmd := &cobra.Command{
		Use:   "build [DIR]",
		Short: "Build a plugin project into a .wasm module and print its size and sha256",
		Long: `build compiles the plugin project in DIR (default: the current directory)
with TinyGo, using wasmsched's target and flags (installed by
scripts/install-tinygo.sh in /opt/tinygo, or $TINYGOROOT), or with standard Go
for wasip1 (--toolchain go). It prints the module's path, size and sha256,
ready to paste into a configuration's modules entry.`,
		Args: positional(nil, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = "."
			if len(args) == 1 {
				o.Dir = args[0]
			}
			o.Toolchain = pluginbuild.Toolchain(toolchain)
			res, err := pluginbuild.Build(cmd.Context(), o)
			if err != nil {
				return err
			}
			shown := res.Path
			if wd, err := os.Getwd(); err == nil {
				if r, err := filepath.Rel(wd, res.Path); err == nil && !strings.HasPrefix(r, "..") {
					shown = r
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s with %s: %d bytes\nsha256: %s\n", shown, toolchain, res.Size, res.SHA256)
			return nil
		},
	}
	cmd.Flags().StringVar(&toolchain, "toolchain", "tinygo", "tinygo (small, fast modules) or go (standard Go, GOOS=wasip1)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "module path (default DIR/<dir name>.wasm)")
	cmd.Flags().StringVar(&o.Package, "package", ".", "main package in the project")
	cmd.Flags().StringVar(&o.TinyGoRoot, "tinygo-root", "", "TinyGo installation (default $TINYGOROOT, else /opt/tinygo)")
	return cmd
}
