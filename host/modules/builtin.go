package modules

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
	"github.com/wasmsched/wasmsched/plugins-wasm/evictiondefaults"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

// Builtin describes a module compiled into the binary, for `wasmsched
// version`: users pin and audit what they run by these digests.
type Builtin struct {
	Name   string
	Size   int
	SHA256 string
}

// Builtins lists the modules embedded in this binary.
func Builtins() []Builtin {
	return []Builtin{
		{Name: config.BuiltinDefaultModule, Size: len(dist.DefaultWasm), SHA256: builtinDigest()},
		{Name: config.BuiltinEvictionModule, Size: len(dist.EvictionWasm), SHA256: evictionDigest()},
		{Name: config.BuiltinKnativeModule, Size: len(dist.KnativeWasm), SHA256: knativeDigest()},
	}
}

// builtinDigest is the default bundle's sha256, computed once.
var builtinDigest = sync.OnceValue(func() string { return digest(dist.DefaultWasm) })

// evictionDigest is the eviction bundle's sha256, computed once.
var evictionDigest = sync.OnceValue(func() string { return digest(dist.EvictionWasm) })

// knativeDigest is the knative bundle's sha256, computed once.
var knativeDigest = sync.OnceValue(func() string { return digest(dist.KnativeWasm) })

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// builtinCollects reports whether a builtin bundle's build collects its
// garbage: all but the default bundle, which the Makefile builds with
// TinyGo's leaking allocator (TINYGO_LEAKING).
func builtinCollects(name string) bool { return name != config.BuiltinDefaultModule }

// builtinModule returns a builtin module's bytes, digest and native
// twin's plugins.
func builtinModule(name string) (bin []byte, sum string, twin []plugin.Registration) {
	switch name {
	case config.BuiltinEvictionModule:
		return dist.EvictionWasm, evictionDigest(), evictiondefaults.Plugins()
	case config.BuiltinKnativeModule:
		return dist.KnativeWasm, knativeDigest(), knativedefaults.Plugins()
	}
	return dist.DefaultWasm, builtinDigest(), defaults.Plugins()
}
