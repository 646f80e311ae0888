// Command wasmsched is a Kubernetes scheduler whose filter and score
// policies are WebAssembly modules.
//
//	wasmsched simulate examples/cluster.yaml --config examples/profiles.yaml
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "wasmsched:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:           "wasmsched",
		Short:         "A Kubernetes scheduler with WebAssembly policies",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error")
	logger := func() hclog.Logger {
		return hclog.New(&hclog.LoggerOptions{Name: "wasmsched", Level: hclog.LevelFromString(logLevel), Output: os.Stderr})
	}
	root.AddCommand(newSimulateCommand(logger), newServeCommand(logger))
	root.AddCommand(newPerfCommand(logger))
	return root
}
