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

// EvictionMemoryLimit is the eviction bundle's default memory limit, what
// its instances get when its modules entry sets no memoryLimit (other
// modules get the runtime's, wasm.DefaultMemoryBytes: 64 MiB). The
// eviction bundle mirrors every pod of the cluster, each with its
// observation: at 15 000 nodes and 150 000 pods (Kubernetes' documented
// ceiling of pods per cluster) its first sync is 12.9 MB and it holds
// more than 64 MiB (BenchmarkEvictionRound with WASMSCHED_BENCH_NODES=15000
// traps in TinyGo's allocator under 64 MiB), fits in 128 MiB, and at
// 200 000 pods no longer does. 256 MiB holds 300 000 of the benchmark's
// pods, twice the ceiling, for pods that carry more than the benchmark's
// (labels, owners, tolerations). It is a power of two because TinyGo
// grows its heap by doubling the memory: a TinyGo guest under a limit
// that is not one stops at the largest power of two below it. It stays
// a hard cap, and an operator sets another with the entry's memoryLimit.
const EvictionMemoryLimit = 256 << 20

// builtinMemoryLimit is a builtin bundle's memory limit when its entry
// sets none; 0 leaves the runtime's default.
func builtinMemoryLimit(name string) int64 {
	if name == config.BuiltinEvictionModule {
		return EvictionMemoryLimit
	}
	return 0
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
