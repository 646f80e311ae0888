package config

import (
	"fmt"
	"strings"

	"oras.land/oras-go/v2/registry"
)

// ImageSource is a module entry's image reference, parsed.
type ImageSource struct {
	// Registry is the host (and port) of the registry.
	Registry string
	// Repository is the repository in it.
	Repository string
	// Tag is the tag, "" when the reference is a digest.
	Tag string
	// Digest is the manifest's digest ("sha256:…"), "" for a tag.
	Digest string
}

// ParseImage parses REGISTRY/REPO@sha256:DIGEST or REGISTRY/REPO:TAG (the
// registry is always named: no Docker Hub default, so a reference reads
// the same everywhere). REPO:TAG@DIGEST keeps the digest.
func ParseImage(s string) (ImageSource, error) {
	if s == "" {
		return ImageSource{}, fmt.Errorf("empty image reference")
	}
	ref, err := registry.ParseReference(s)
	if err != nil {
		return ImageSource{}, fmt.Errorf("%q is not an image reference REGISTRY/REPO@sha256:DIGEST or REGISTRY/REPO:TAG: %w", s, err)
	}
	if ref.Reference == "" {
		return ImageSource{}, fmt.Errorf("%q names no tag or digest; write REGISTRY/REPO@sha256:DIGEST (or :TAG with a sha256 pin)", s)
	}
	src := ImageSource{Registry: ref.Registry, Repository: ref.Repository}
	if d, err := ref.Digest(); err == nil {
		if d.Algorithm() != "sha256" {
			return ImageSource{}, fmt.Errorf("%q: digest algorithm %s; only sha256 is accepted", s, d.Algorithm())
		}
		src.Digest = d.String()
	} else {
		src.Tag = ref.Reference
	}
	return src, nil
}

// String writes the reference back: REGISTRY/REPO@DIGEST or REGISTRY/REPO:TAG.
func (s ImageSource) String() string {
	if s.Digest != "" {
		return s.Registry + "/" + s.Repository + "@" + s.Digest
	}
	return s.Registry + "/" + s.Repository + ":" + s.Tag
}

// checkImage checks a module-from-image entry (f is its field path).
func checkImage(m *ModuleSpec, f string, add func(field, format string, a ...any)) {
	src, err := ParseImage(m.Image)
	if err != nil {
		add(f+".image", "%v", err)
		return
	}
	switch m.PullPolicy {
	case "", PullIfNotPresent, PullAlways, PullNever:
	default:
		add(f+".pullPolicy", "must be IfNotPresent, Always or Never, not %q", m.PullPolicy)
	}
	if src.Tag != "" && m.SHA256 == "" && m.PullPolicy != PullAlways {
		add(f+".image", "the tag %q is not pinned: pin the module with sha256 (`wasmsched plugin push` prints it), use REGISTRY/REPO@sha256:DIGEST, "+
			"or set pullPolicy: Always to run whatever the tag names", src.Tag)
	}
	if m.FailStrategy != "" && m.FailStrategy != FailClose && m.FailStrategy != FailOpen {
		add(f+".failStrategy", "must be FailClose or FailOpen, not %q", m.FailStrategy)
	}
	if strings.ContainsRune(m.PullSecret, 0) {
		add(f+".pullSecret", "is not a valid path")
	}
	if strings.ContainsRune(m.CAFile, 0) {
		add(f+".caFile", "is not a valid path")
	}
}
