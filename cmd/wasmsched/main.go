// Command wasmsched is a Kubernetes scheduler whose filter and score
// policies are WebAssembly modules.
//
//	wasmsched simulate examples/cluster.yaml --config examples/profiles.yaml
package main

import (
	"fmt"
	"os"
	"strings"

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
	var (
		logLevel  string
		verbosity int
		level     hclog.Level
	)
	root := &cobra.Command{
		Use:           "wasmsched",
		Short:         "A Kubernetes scheduler with WebAssembly policies",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			var err error
			level, err = logLevelOf(logLevel, verbosity)
			return err
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error, off")
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0, "log verbosity as kube-scheduler takes it: 1-2 info, 3-4 debug, 5 and up trace (the more verbose of --v and --log-level wins)")
	logger := func() hclog.Logger {
		return hclog.New(&hclog.LoggerOptions{Name: "wasmsched", Level: level, Output: os.Stderr})
	}
	root.AddCommand(newSimulateCommand(logger), newServeCommand(logger))
	root.AddCommand(newPerfCommand(logger), newPluginCommand(), newVersionCommand())
	// --version prints what `wasmsched version` does. -v stays
	// kube-scheduler's verbosity (-v 4, --v=4), so a -v without a number
	// is refused with a word on both.
	root.Version = currentVersion().text()
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(flagError)
	refuseUnknownSubcommands(root)
	return root
}

// flagError explains a -v given no number: kube-scheduler's verbosity, not
// the version many tools print for -v.
func flagError(_ *cobra.Command, err error) error {
	if strings.Contains(err.Error(), "flag needs an argument: 'v' in -v") || strings.Contains(err.Error(), "flag needs an argument: --v") {
		return fmt.Errorf("%w: -v is the log verbosity, as kube-scheduler takes it (-v 4, --v=4); the version is --version", err)
	}
	return err
}

// refuseUnknownSubcommands makes every command that only groups others
// (the root, plugin) fail on a word that is none of them, naming the
// closest commands and where the list is, instead of printing its help
// and exiting 0 (cobra's default below the root).
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return fmt.Errorf("%s (%q lists the commands)", msg, cmd.CommandPath()+" --help")
	}
}

// logLevelOf combines --log-level with kube-scheduler's -v: an unknown
// level name is refused (hclog would silently fall back to info).
func logLevelOf(name string, v int) (hclog.Level, error) {
	level := hclog.LevelFromString(name)
	if level == hclog.NoLevel {
		return hclog.NoLevel, fmt.Errorf("--log-level %q: want trace, debug, info, warn, error or off", name)
	}
	var fromV hclog.Level
	switch {
	case v < 0:
		return hclog.NoLevel, fmt.Errorf("--v %d: verbosity cannot be negative", v)
	case v == 0:
		return level, nil
	case v <= 2:
		fromV = hclog.Info
	case v <= 4:
		fromV = hclog.Debug
	default:
		fromV = hclog.Trace
	}
	return min(level, fromV), nil
}
