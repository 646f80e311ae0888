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
