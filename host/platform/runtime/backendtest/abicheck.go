package backendtest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// shapeRow is a module Compile must refuse, and the words of the refusal.
type shapeRow struct {
	name  string
	guest string // a test guest, or "" for bin
	bin   []byte
	want  []string
}

var shapeRows = []shapeRow{
	{name: "missing export and a mistyped one", guest: "bad_exports", want: []string{
		"not a wasmsched ABI v1 module", "missing export wasmsched_call",
		"export wasmsched_input has signature (i64) -> (i32), want (i32) -> (i32)"}},
	{name: "memory not exported as memory", guest: "nomem_export", want: []string{
		`not a wasmsched ABI v1 module: its linear memory is not exported as "memory"`}},
	{name: "command module", guest: "command", want: []string{"is a command (exports _start)", "-buildmode=c-shared"}},
	{name: "foreign import", guest: "foreign_import", want: []string{"imports env.open_socket, which the host does not provide"}},
	{name: "not Wasm at all", bin: []byte("\x00asm but not really")},
}

var abiCases = func() []wasmCase {
	var cs []wasmCase
	for _, r := range shapeRows {
		cs = append(cs, wasmCase{"abi/compile refuses: " + r.name, func(t *testing.T, s *suite) { compileRefuses(t, s, r) }})
	}
	return append(cs,
		wasmCase{"abi/load refuses another major version", loadRefusesOtherMajor},
		wasmCase{"abi/load refuses a module lacking a required plugin", missingPlugin},
	)
}()

func compileRefuses(t *testing.T, s *suite, r shapeRow) {
	name, bin := r.guest, r.bin
	if name == "" {
		name = "garbage"
	} else {
		bin = Guest(t, name)
	}
	_, _, err := s.tryCompile(t, name, bin, wasm.Limits{})
	if err == nil {
		t.Fatal("compile succeeded, want an error")
	}
	wantWords(t, err, append([]string{`module "` + name + `"`}, r.want...)...)
}

func loadRefusesOtherMajor(t *testing.T, s *suite) {
	b, _ := s.compile(t, "v2", Guest(t, "abi_v2"), wasm.Limits{})
	_, err := guest.Load(context.Background(), b, guest.PoolConfig{Name: "v2"})
	if err == nil {
		t.Fatal("a module built for ABI v2 loaded")
	}
	wantWords(t, err, fmt.Sprintf(`module "v2": built for ABI v2.0, but this host speaks ABI v1.%d`, abi.VersionMinor))
}

func missingPlugin(t *testing.T, s *suite) {
	for _, build := range misbehaveBuilds {
		t.Run(build.name, func(t *testing.T) {
			b, _ := s.misbehave(t, build)
			_, err := guest.Load(context.Background(), b, guest.PoolConfig{Name: "misbehave", Require: []string{"Misbehave", "NodePorts"}})
			if !errors.Is(err, guest.ErrMissingPlugin) {
				t.Fatalf("err = %v, want %v", err, guest.ErrMissingPlugin)
			}
			wantWords(t, err, `module "misbehave"`, `"NodePorts" (it implements Misbehave)`)
		})
	}
}
