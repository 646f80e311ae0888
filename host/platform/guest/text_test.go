package guest_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wasmsched/wasmsched/host/platform/guest"
)

func TestGuestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Insufficient cpu", "Insufficient cpu"},
		{"line1\nline2\r\n\tline3", "line1 line2 line3"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"a\x1b]0;window title\x07b", "ab"},
		{"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"},
		{"a\u009b31mb", "ab"},
		{"x\x00y\x7fz\x08", "xyz"},
		{"bidi \u202eevil\u202c zero\u200bwidth", "bidi evil zerowidth"},
		{"bad \xff utf8", "bad \ufffd utf8"},
		{"\n\nleading and trailing\n\n", "leading and trailing"},
		{"ünïcödé stays", "ünïcödé stays"},
		{"a\x1b", "a"},
	} {
		if got := guest.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestGuestTextIsBounded(t *testing.T) {
	for _, in := range []string{strings.Repeat("x", 5000), strings.Repeat("é", 5000), strings.Repeat("a\n", 5000)} {
		got := guest.Text(in)
		if len(got) > guest.MaxText || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Errorf("%d bytes in: %d bytes out, valid UTF-8 %v, ends %q", len(in), len(got), utf8.ValidString(got), got[max(0, len(got)-4):])
		}
	}
	exact := strings.Repeat("x", guest.MaxText)
	if got := guest.Text(exact); got != exact {
		t.Errorf("text of exactly the bound was changed")
	}
}

func TestCallErrorIsOneLine(t *testing.T) {
	err := &guest.CallError{Module: "m", Plugin: "P", Func: 6, Broken: true,
		Err: errorString("wasm error: unreachable\nwasm stack trace:\n\t.runtime.panic(i32)\n\t.main.Filter(i32)\npanic: index out of range [3] with length 0")}
	got := err.Error()
	want := `module "m": filter plugin "P": instance lost: wasm error: unreachable panic: index out of range [3] with length 0`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func FuzzGuestText(f *testing.F) {
	f.Add("a\x1b[1;2mb\nc")
	f.Add("\x1b]0;\x9c\u009b")
	f.Fuzz(func(t *testing.T, s string) {
		got := guest.Text(s)
		if len(got) > guest.MaxText || !utf8.ValidString(got) {
			t.Fatalf("%q -> %q", s, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("%q -> %q keeps control %U", s, got, r)
			}
		}
		if again := guest.Text(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, again)
		}
	})
}
