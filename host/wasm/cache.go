package wasm

import "github.com/wasmsched/wasmsched/host/internal/compcache"

// The on-disk compilation cache is checked before wazero reads it
// (package compcache states how): a private root, one directory per
// sha256 of the instrumented module (what wazero compiles), every file
// checked against a manifest written at compile time; an altered or
// unrecorded file is removed before wazero reads the directory, so wazero
// recompiles, and the rejection is logged and counted
// (Runtime.CacheRejected).

func privateDir(dir string) error { return compcache.PrivateDir(dir) }

func verifyCacheDir(dir, digest string) ([]string, error) { return compcache.VerifyDir(dir, digest) }

func sealCacheDir(dir, digest string) error { return compcache.SealDir(dir, digest) }
