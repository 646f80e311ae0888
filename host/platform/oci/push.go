package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go"
	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// wasmConfig is the CNCF layout's config blob. It carries no creation
// time, so pushing the same module twice gives the same digest.
type wasmConfig struct {
	Architecture string   `json:"architecture"`
	OS           string   `json:"os"`
	LayerDigests []string `json:"layerDigests"`
}

// Pushed is what Push published.
type Pushed struct {
	// Manifest is the manifest's digest: what image: REPO@DIGEST names.
	Manifest string
	// SHA256 is the module's sha256: what a sha256 pin names.
	SHA256 string
}

// Push publishes a module in the CNCF Wasm artifact layout to target and,
// when tag is set, tags it.
func Push(ctx context.Context, target oras.Target, tag string, wasm []byte) (Pushed, error) {
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return Pushed{}, fmt.Errorf("not a Wasm binary (no \\0asm header)")
	}
	layer := content.NewDescriptorFromBytes(LayerMediaType, wasm)
	cfgBytes, err := json.Marshal(wasmConfig{Architecture: "wasm", OS: "wasip1", LayerDigests: []string{layer.Digest.String()}})
	if err != nil {
		return Pushed{}, err
	}
	cfg := content.NewDescriptorFromBytes(ConfigMediaType, cfgBytes)
	man := v1.Manifest{Versioned: ocispec.Versioned{SchemaVersion: 2}, MediaType: v1.MediaTypeImageManifest, Config: cfg, Layers: []v1.Descriptor{layer}}
	manBytes, err := json.Marshal(man)
	if err != nil {
		return Pushed{}, err
	}
	mdesc := content.NewDescriptorFromBytes(v1.MediaTypeImageManifest, manBytes)
	for _, b := range []struct {
		desc v1.Descriptor
		data []byte
	}{{cfg, cfgBytes}, {layer, wasm}, {mdesc, manBytes}} {
		if ok, err := target.Exists(ctx, b.desc); err == nil && ok {
			continue
		}
		if err := target.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
			return Pushed{}, fmt.Errorf("push %s %s: %w", b.desc.MediaType, b.desc.Digest, err)
		}
	}
	if tag != "" {
		if err := target.Tag(ctx, mdesc, tag); err != nil {
			return Pushed{}, fmt.Errorf("tag %s: %w", tag, err)
		}
	}
	return Pushed{Manifest: mdesc.Digest.String(), SHA256: layer.Digest.Encoded()}, nil
}

// ReadModule reads a module file to push: a regular file of at most max
// bytes (a FIFO, a device or an oversized file is refused before reading).
func ReadModule(path string, max int64) ([]byte, error) {
	return boundedread.ReadFile(path, max, boundedread.Regular, "a Wasm module")
}
