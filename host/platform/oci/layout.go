// Package oci pulls policy modules from OCI registries and pushes them
// there: the CNCF Wasm artifact layout (config
// application/vnd.wasm.config.v0+json, one application/wasm layer) and
// the common single-layer variants, verified by digest at every step,
// kept in a local content-addressed cache so that a restart, a second
// replica sharing the cache or a registry outage does not need the
// registry again. The registry protocol, authentication and TLS are
// oras-go's (oras.land/oras-go/v2); this package decides what a module
// image is and when the cache answers.
package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Media types of the CNCF Wasm artifact layout
// (tag-runtime.cncf.io/wgs/wasm/deliverables/wasm-oci-artifact).
const (
	ConfigMediaType = "application/vnd.wasm.config.v0+json"
	LayerMediaType  = "application/wasm"
)

// wasmLayerTypes are the layer media types whose content is a Wasm
// module as is: the CNCF layout's, and the variants of earlier Wasm
// image formats (Solo's wasme / Istio's WasmPlugin images).
var wasmLayerTypes = map[string]bool{
	LayerMediaType: true,
	"application/vnd.wasm.content.layer.v1+wasm":        true,
	"application/vnd.module.wasm.content.layer.v1+wasm": true,
}

// tarLayerTypes are the layer media types of an ordinary container
// image, whose single layer holds the module as a file (plugin.wasm, or
// the one *.wasm file): Istio's "compat" image variant.
var tarLayerTypes = map[string]bool{
	ocispec.MediaTypeImageLayer:                         true,
	ocispec.MediaTypeImageLayerGzip:                     true,
	"application/vnd.docker.image.rootfs.diff.tar":      true,
	"application/vnd.docker.image.rootfs.diff.tar.gzip": true,
}

// manifestTypes are the manifest media types a module image may have.
var manifestTypes = map[string]bool{
	ocispec.MediaTypeImageManifest:                         true,
	"application/vnd.docker.distribution.manifest.v2+json": true,
}

// indexTypes are manifest lists, which name no single module.
var indexTypes = map[string]bool{
	ocispec.MediaTypeImageIndex:                                 true,
	"application/vnd.docker.distribution.manifest.list.v2+json": true,
}

// MaxManifestBytes bounds a manifest: a module's has two descriptors and
// is well under a KiB; 4 MiB is the limit registries themselves apply.
const MaxManifestBytes = 4 << 20

// wasmMagic starts every Wasm binary module.
var wasmMagic = []byte{0, 'a', 's', 'm'}

// moduleLayer picks the layer holding the module from a manifest's
// bytes: the one Wasm layer, else the one layer of a container image.
// It reports whether the layer is a tar archive to extract the module
// from.
func moduleLayer(manifest []byte) (ocispec.Descriptor, bool, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return ocispec.Descriptor{}, false, fmt.Errorf("the manifest is not valid JSON: %w", err)
	}
	if indexTypes[m.MediaType] {
		return ocispec.Descriptor{}, false, fmt.Errorf("the reference names an index (%s), not a module's manifest; name the manifest's own digest", m.MediaType)
	}
	var wasm []ocispec.Descriptor
	var types []string
	for _, l := range m.Layers {
		types = append(types, l.MediaType)
		if wasmLayerTypes[l.MediaType] {
			wasm = append(wasm, l)
		}
	}
	switch {
	case len(wasm) == 1:
		return wasm[0], false, nil
	case len(wasm) > 1:
		return ocispec.Descriptor{}, false, fmt.Errorf("the manifest has %d Wasm layers; a module image has one", len(wasm))
	case len(m.Layers) == 1 && tarLayerTypes[m.Layers[0].MediaType]:
		return m.Layers[0], true, nil
	case len(m.Layers) == 0:
		return ocispec.Descriptor{}, false, errors.New("the manifest has no layers; a module image has one application/wasm layer")
	}
	return ocispec.Descriptor{}, false, fmt.Errorf("no Wasm layer among the manifest's layers (%s); a module image has one %s layer, or is an image of one layer holding a .wasm file",
		strings.Join(types, ", "), LayerMediaType)
}

// extractTar returns the Wasm module in a (possibly gzip-compressed) tar
// layer: the file named plugin.wasm, else the only *.wasm file. It reads
// at most max bytes of module.
func extractTar(layer []byte, max int64) ([]byte, error) {
	var r io.Reader = bytes.NewReader(layer)
	if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("the layer is not valid gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	var found []byte
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the layer is not a valid tar archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(h.Name, ".wasm") {
			continue
		}
		if h.Size > max {
			return nil, fmt.Errorf("%s in the layer is %d bytes, over the %d-byte module limit", h.Name, h.Size, max)
		}
		b, err := io.ReadAll(io.LimitReader(tr, max+1))
		if err != nil {
			return nil, fmt.Errorf("read %s from the layer: %w", h.Name, err)
		}
		if int64(len(b)) > max {
			return nil, fmt.Errorf("%s in the layer is over the %d-byte module limit", h.Name, max)
		}
		names = append(names, h.Name)
		if path.Base(h.Name) == "plugin.wasm" {
			return b, nil
		}
		found = b
	}
	switch len(names) {
	case 0:
		return nil, errors.New("the image's layer holds no .wasm file")
	case 1:
		return found, nil
	}
	return nil, fmt.Errorf("the image's layer holds %d .wasm files (%s) and none is plugin.wasm; which is the module is ambiguous", len(names), strings.Join(names, ", "))
}

// moduleFromLayer returns the module a layer holds and checks it is Wasm.
func moduleFromLayer(layer []byte, isTar bool, max int64) ([]byte, error) {
	bin := layer
	if isTar {
		var err error
		if bin, err = extractTar(layer, max); err != nil {
			return nil, err
		}
	}
	if !bytes.HasPrefix(bin, wasmMagic) {
		return nil, errors.New("the module layer is not a Wasm binary (no \\0asm header)")
	}
	return bin, nil
}
