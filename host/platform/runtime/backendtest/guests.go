package backendtest

import (
	"embed"
	"testing"
)

//go:generate sh -c "for f in testdata/*.wat; do wat2wasm $DOLLAR(sed -n 's/^;; wat2wasm flags: //p' \"$DOLLAR{f}\") \"$DOLLAR{f}\" -o \"$DOLLAR{f%.wat}.wasm\" || exit 1; done"

// guests are the suite's hand-written test guests (testdata/*.wat, each
// file's header says what it does; a header line ";; wat2wasm flags: …"
// gives wat2wasm more flags, e.g. --debug-names to keep function names).
//
//go:embed testdata/*.wasm
var guests embed.FS

// Guest returns the committed build of testdata/<name>.wasm, one of the
// suite's test guests; other packages' tests use them too (host/platform/runtime/wasm's
// instrumentation tests). It fails the test if there is none.
func Guest(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := guests.ReadFile("testdata/" + name + ".wasm")
	if err != nil {
		tb.Fatalf("test guest %s: %v", name, err)
	}
	return b
}
