package guestout

import (
	"strings"
	"testing"
)

func TestTrapSiteNamesTheInnermostFunction(t *testing.T) {
	long := strings.Repeat("x", 500)
	for _, c := range []struct{ name, text, want string }{
		{"wazero, TinyGo method name with parentheses",
			"wasm error: unreachable\nwasm stack trace:\n\t.(*github.com/a/b.fitState).fails(i32,i32,i32,i32)\n\t.wasmsched_call(i32,i32,i32) i64",
			"(*github.com/a/b.fitState).fails"},
		{"wazero, named module, no parameters", "wasm error: unreachable\nwasm stack trace:\n\tmod.main.run() i32", "main.run"},
		{"wazero, no name section", "wasm error: unreachable\nwasm stack trace:\n\t.$3(i32,i32,i32) i64", "$3"},
		{"wasmtime", "error while executing at wasm backtrace:\n    0:   0x1f6b - <unknown>!github.com/a/b.scalar\n    1: 0x20 - <unknown>!wasmsched_call\n\nCaused by:\n    wasm trap: wasm `unreachable` instruction executed",
			"github.com/a/b.scalar"},
		{"wasmtime, no name section", "error while executing at wasm backtrace:\n    0:     0xcb - <unknown>!<wasm function 3>\n", "$3"},
		{"hostile name is one bounded line", "wasm backtrace:\n    0: 0x1 - m!" + long + "\x1b[2J", strings.Repeat("x", maxSite) + "…"},
		{"no trace", "wasm error: unreachable", ""},
		{"trace header last", "wasm error: unreachable\nwasm stack trace:", ""},
		{"wazero frame of another shape", "wasm stack trace:\n\tnot a frame", ""},
	} {
		if got := TrapSite(c.text); got != c.want {
			t.Errorf("%s: TrapSite = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOutOfMemoryNeedsEvidence: a failure reads as out of memory only on
// evidence (a refused memory.grow, TinyGo's allocator, an allocator's
// last words), and then says where the memory stood against its limit.
func TestOutOfMemoryNeedsEvidence(t *testing.T) {
	full := Memory{Size: 64 << 20, Limit: 64 << 20}
	for _, c := range []struct {
		name, words, site string
		mem               Memory
		want              string
	}{
		{"a plain trap at the limit", "", "main.f", full, ""},
		{"other last words", "panic: index out of range", "", full, ""},
		{"refused grow at the limit", "", "main.f", Memory{Size: 64 << 20, Limit: 64 << 20, GrowRefused: true},
			"guest out of memory (memoryLimit 64 MiB reached)"},
		{"refused grow under the limit", "", "", Memory{Size: 64 << 20, Limit: 96 << 20, GrowRefused: true},
			"guest out of memory (memory 64 MiB, memoryLimit 96 MiB: a memory.grow past the limit was refused)"},
		{"TinyGo's allocator", "", "runtime.alloc", Memory{Size: 32256 << 10, Limit: 32 << 20},
			"guest out of memory (memory 31.5 MiB, memoryLimit 32 MiB)"},
		{"TinyGo's words", "panic: runtime error at 0x00001234: out of memory", "", full,
			"guest out of memory (memoryLimit 64 MiB reached)"},
		{"Go's words", "fatal error: out of memory", "", Memory{Size: 128 << 10, Limit: 1 << 20},
			"guest out of memory (memory 128 KiB, memoryLimit 1 MiB)"},
		{"Rust's words", "memory allocation of 1024 bytes failed", "", Memory{}, "guest out of memory"},
		{"Rust-like words, no failure", "memory allocation of 1024 bytes", "", full, ""},
	} {
		if got := OutOfMemory(c.words, c.site, c.mem); got != c.want {
			t.Errorf("%s: OutOfMemory = %q, want %q", c.name, got, c.want)
		}
	}
}
