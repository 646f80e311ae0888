package modshape

import (
	"errors"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// reactor is a well-shaped module.
func reactor() Shape {
	m := Shape{Funcs: map[string]Signature{}, Memories: map[string]bool{MemoryExport: true}}
	for name, sig := range Required {
		m.Funcs[name] = sig
	}
	m.Funcs[Initialize.Name] = Signature{}
	m.Imports = []Import{{WASIModule, "fd_write"}, {abi.ImportModule, abi.ImportLog}}
	return m
}

func TestCheck(t *testing.T) {
	if err := Check(reactor()); err != nil {
		t.Fatalf("a reactor was refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(m *Shape)
		words []string
	}{
		{"command", func(m *Shape) { delete(m.Funcs, Initialize.Name); m.Funcs["_start"] = Signature{} },
			[]string{"is a command (exports _start)"}},
		{"every problem, sorted", func(m *Shape) {
			delete(m.Memories, MemoryExport)
			delete(m.Funcs, abi.ExportCall)
			m.Funcs[abi.ExportInput] = Signature{[]ValueType{I64}, []ValueType{I32}}
			m.Funcs[Initialize.Name] = Signature{Params: []ValueType{I32}}
			m.Imports = append(m.Imports, Import{"env", "open"}, Import{abi.ImportModule, "exec"})
		}, []string{"not a wasmsched ABI v1 module: " +
			"export _initialize has signature (i32) -> (), want () -> (); " +
			"export wasmsched_input has signature (i64) -> (i32), want (i32) -> (i32); " +
			"imports env.open, which the host does not provide; " +
			"imports wasmsched.exec, which the host does not provide; " +
			`its linear memory is not exported as "memory"; ` +
			"missing export wasmsched_call"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := reactor()
			tc.edit(&m)
			err := Check(m)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if tc.name == "command" && !errors.Is(err, ErrNotReactor) {
				t.Errorf("%v is not ErrNotReactor", err)
			}
		})
	}
}
