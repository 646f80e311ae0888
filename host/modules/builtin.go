package modules

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
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
	return []Builtin{{Name: config.BuiltinDefaultModule, Size: len(dist.DefaultWasm), SHA256: builtinDigest()}}
}

// builtinDigest is the default bundle's sha256, computed once.
var builtinDigest = sync.OnceValue(func() string {
	sum := sha256.Sum256(dist.DefaultWasm)
	return hex.EncodeToString(sum[:])
})
