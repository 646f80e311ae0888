package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// positional checks a command's positional arguments against the names
// it takes (required first, then up to optional ones), so a missing or
// extra argument is refused with the name of what is missing and the
// usage line, not cobra's "accepts 2 arg(s), received 0".
func positional(required []string, optional ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		usage := "usage: " + cmd.UseLine()
		if len(args) < len(required) {
			missing := required[len(args):]
			return fmt.Errorf("%s needs %s: missing %s (%s)", cmd.CommandPath(), strings.Join(required, " and "), strings.Join(missing, " and "), usage)
		}
		if max := len(required) + len(optional); len(args) > max {
			return fmt.Errorf("%s takes at most %d argument(s), got %d: %q is one too many (%s)", cmd.CommandPath(), max, len(args), args[max], usage)
		}
		return nil
	}
}
