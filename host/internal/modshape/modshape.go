// Package modshape checks that a compiled module has the shape of a
// wasmsched reactor — the ABI exports with their signatures, its memory
// exported, no imports beyond WASI and the wasmsched host module, not a
// command — from a runtime-neutral description of it, so the wazero and
// the wasmtime backends refuse the same modules with the same words.
package modshape

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/wasmsched/wasmsched/abi"
)

// ValueType is a Wasm value type by its binary encoding (as wazero's
// api.ValueType is).
type ValueType byte

// Value types.
const (
	I32       ValueType = 0x7f
	I64       ValueType = 0x7e
	F32       ValueType = 0x7d
	F64       ValueType = 0x7c
	V128      ValueType = 0x7b
	FuncRef   ValueType = 0x70
	ExternRef ValueType = 0x6f
)

func (t ValueType) String() string {
	switch t {
	case I32:
		return "i32"
	case I64:
		return "i64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	case V128:
		return "v128"
	case FuncRef:
		return "funcref"
	case ExternRef:
		return "externref"
	}
	return "unknown"
}

// Signature is a function's parameter and result types.
type Signature struct{ Params, Results []ValueType }

func (s Signature) String() string {
	name := func(ts []ValueType) string {
		n := make([]string, len(ts))
		for i, t := range ts {
			n[i] = t.String()
		}
		return "(" + strings.Join(n, ", ") + ")"
	}
	return name(s.Params) + " -> " + name(s.Results)
}

// Import names an imported function.
type Import struct{ Module, Name string }

// Shape is what the check needs to know of a compiled module.
type Shape struct {
	Funcs    map[string]Signature // exported functions by name
	Memories map[string]bool      // names of exported memories
	Imports  []Import             // imported functions
}

// MemoryExport is the name the ABI requires for the guest's linear
// memory: the host reads inputs and replies there.
const MemoryExport = "memory"

// WASIModule is the import module of WASI preview 1.
const WASIModule = "wasi_snapshot_preview1"

// Required are the ABI exports with their signatures.
var Required = map[string]Signature{
	abi.ExportABIVersion: {nil, []ValueType{I32}},
	abi.ExportInput:      {[]ValueType{I32}, []ValueType{I32}},
	abi.ExportCall:       {[]ValueType{I32, I32, I32}, []ValueType{I64}},
}

// Initialize is the optional export a reactor initialises in (Go and
// TinyGo set up their runtime there), with its signature.
var Initialize = struct {
	Name string
	Sig  Signature
}{"_initialize", Signature{}}

// ErrNotReactor is wrapped when a module is built as a command.
var ErrNotReactor = errors.New("module is a command (exports _start), not a reactor: build it with -buildmode=c-shared")

// Check refuses a module that is not a wasmsched reactor, naming every
// problem in one sorted line.
func Check(m Shape) error {
	if _, ok := m.Funcs["_start"]; ok {
		if _, ok := m.Funcs["_initialize"]; !ok {
			return ErrNotReactor
		}
	}
	var problems []string
	if !m.Memories[MemoryExport] {
		problems = append(problems, fmt.Sprintf("its linear memory is not exported as %q", MemoryExport))
	}
	for name, want := range Required {
		got, ok := m.Funcs[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("missing export %s", name))
			continue
		}
		if !slices.Equal(got.Params, want.Params) || !slices.Equal(got.Results, want.Results) {
			problems = append(problems, fmt.Sprintf("export %s has signature %s, want %s", name, got, want))
		}
	}
	if got, ok := m.Funcs[Initialize.Name]; ok && (len(got.Params) > 0 || len(got.Results) > 0) {
		problems = append(problems, fmt.Sprintf("export %s has signature %s, want %s", Initialize.Name, got, Initialize.Sig))
	}
	for _, imp := range m.Imports {
		if imp.Module == WASIModule || imp.Module == abi.ImportModule && imp.Name == abi.ImportLog {
			continue
		}
		problems = append(problems, fmt.Sprintf("imports %s.%s, which the host does not provide", imp.Module, imp.Name))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("not a wasmsched ABI v%d module: %s", abi.VersionMajor, strings.Join(problems, "; "))
	}
	return nil
}
