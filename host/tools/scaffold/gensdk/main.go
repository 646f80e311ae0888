// Command gensdk rewrites host/tools/scaffold/sdk.zip from the repository's abi
// and guest-sdk sources (`go generate ./host/tools/scaffold`, run from anywhere in
// the repository).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/wasmsched/wasmsched/host/tools/scaffold"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gensdk:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	for !exists(filepath.Join(dir, "guest-sdk", "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			return fmt.Errorf("repository root not found above the working directory")
		}
		dir = parent
	}
	b, err := scaffold.BuildSDKArchive(dir)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "host", "tools", "scaffold", "sdk.zip")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("gensdk: %s (%d bytes)\n", out, len(b))
	return nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
