package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/oci"
)

// registryFlags are how push and pull reach a registry.
type registryFlags struct {
	pullSecret, caFile, username string
	passwordStdin                bool
}

func (f *registryFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.pullSecret, "pull-secret", "", "kubernetes.io/dockerconfigjson (or ~/.docker/config.json) file with the registry's credentials")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM bundle of CAs to trust for the registry, besides the system's")
	fs.StringVar(&f.username, "username", "", "registry user name (the password from --password-stdin)")
	fs.BoolVar(&f.passwordStdin, "password-stdin", false, "read the registry password from standard input")
}

// access reads the password if asked and returns the registry access.
func (f *registryFlags) access(stdin io.Reader) (oci.Access, error) {
	a := oci.Access{PullSecret: f.pullSecret, CAFile: f.caFile, Username: f.username}
	if f.passwordStdin {
		if f.username == "" {
			return a, fmt.Errorf("--password-stdin needs --username")
		}
		line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
		if err != nil && err != io.EOF {
			return a, fmt.Errorf("read the password from standard input: %w", err)
		}
		a.Password = strings.TrimRight(line, "\r\n")
	} else if f.username != "" {
		return a, fmt.Errorf("--username needs --password-stdin")
	}
	return a, nil
}

func newPluginPushCommand() *cobra.Command {
	var rf registryFlags
	cmd := &cobra.Command{
		Use:   "push REGISTRY/REPO[:TAG] FILE.wasm",
		Short: "Publish a built module to an OCI registry (CNCF Wasm artifact layout)",
		Long: `push publishes a module as an OCI artifact in the CNCF Wasm layout (config
application/vnd.wasm.config.v0+json, one application/wasm layer), tagged TAG
if given, and prints the lines a modules entry needs: the image by digest,
and the module's sha256. The same file always gives the same digest.`,
		Args: positional([]string{"REGISTRY/REPO[:TAG]", "FILE.wasm"}),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := registry.ParseReference(args[0])
			if err != nil {
				return fmt.Errorf("%q is not a reference REGISTRY/REPO[:TAG]: %w", args[0], err)
			}
			if _, err := ref.Digest(); err == nil {
				return fmt.Errorf("%q names a digest; push to REGISTRY/REPO or REGISTRY/REPO:TAG (the digest is what push prints)", args[0])
			}
			bin, err := oci.ReadModule(args[1], modules.MaxModuleBytes)
			if err != nil {
				return err
			}
			access, err := rf.access(cmd.InOrStdin())
			if err != nil {
				return err
			}
			repo, err := oci.Repository(config.ImageSource{Registry: ref.Registry, Repository: ref.Repository}, access)
			if err != nil {
				return err
			}
			p, err := oci.Push(cmd.Context(), repo, ref.Reference, bin)
			if err != nil {
				return fmt.Errorf("push %s: %w", args[0], err)
			}
			w := cmd.OutOrStdout()
			if ref.Reference != "" {
				fmt.Fprintf(w, "pushed %s/%s:%s\n", ref.Registry, ref.Repository, ref.Reference)
			}
			fmt.Fprintf(w, "image: %s/%s@%s\nsha256: %s\n", ref.Registry, ref.Repository, p.Manifest, p.SHA256)
			return nil
		},
	}
	rf.register(cmd.Flags())
	return cmd
}

func newPluginPullCommand() *cobra.Command {
	var (
		rf               registryFlags
		output, pin, dir string
	)
	cmd := &cobra.Command{
		Use:   "pull REGISTRY/REPO@sha256:DIGEST|REGISTRY/REPO:TAG -o FILE.wasm",
		Short: "Fetch a module from an OCI registry, verified",
		Long: `pull fetches a module as serve would (the CNCF Wasm layout or a single-layer
variant; manifest and layer digests verified, and --sha256 if given) and
writes it to -o. With --module-cache-dir it also fills that cache, so a
scheduler given the same directory starts without the registry.`,
		Args: positional([]string{"IMAGE"}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return fmt.Errorf("-o FILE is required")
			}
			if _, err := config.ParseImage(args[0]); err != nil {
				return err
			}
			access, err := rf.access(cmd.InOrStdin())
			if err != nil {
				return err
			}
			f := oci.NewFetcher(oci.FetcherOptions{CacheDir: dir, MaxBytes: modules.MaxModuleBytes,
				Target: func(_ *config.ModuleSpec, src config.ImageSource) (oras.ReadOnlyTarget, error) {
					return oci.Repository(src, access)
				}})
			m, err := f.Fetch(context.WithoutCancel(cmd.Context()), &config.ModuleSpec{Name: "pull", Image: args[0], SHA256: pin, PullPolicy: config.PullAlways})
			if err != nil {
				return err
			}
			if err := os.WriteFile(output, m.Bytes, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes)\nimage: %s\nmanifest: %s\nsha256: %s\n", output, len(m.Bytes), args[0], m.Manifest, m.SHA256)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write the module to")
	cmd.Flags().StringVar(&pin, "sha256", "", "refuse the module unless its sha256 is this")
	cmd.Flags().StringVar(&dir, "module-cache-dir", "", "also keep the pulled content in this module cache (serve --module-cache-dir)")
	rf.register(cmd.Flags())
	return cmd
}
