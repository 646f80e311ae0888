// Package testoci gives tests registries that misbehave in known ways,
// so that a module's failStrategy can be tried without a network.
package testoci

import (
	"errors"

	"oras.land/oras-go/v2"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/oci"
)

// Unreachable is a fetcher whose every registry refuses the connection:
// each image module is a fetch failure (FailOpen runs without it,
// FailClose refuses the configuration).
func Unreachable() *oci.Fetcher {
	return oci.NewFetcher(oci.FetcherOptions{MaxBytes: modules.MaxModuleBytes,
		Target: func(*config.ModuleSpec, config.ImageSource) (oras.ReadOnlyTarget, error) {
			return nil, errors.New("dial tcp: connection refused")
		}})
}
