package backendtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuestsAreBuiltFromTheirSources: every committed test guest has its
// .wat next to it, and (where wabt is installed) is what wat2wasm makes
// of it, with the flags its header asks for, so a guest cannot drift from
// the source that documents it.
func TestGuestsAreBuiltFromTheirSources(t *testing.T) {
	wats, err := filepath.Glob("testdata/*.wat")
	if err != nil || len(wats) == 0 {
		t.Fatalf("no guest sources in testdata: %v", err)
	}
	wasms, _ := filepath.Glob("testdata/*.wasm")
	if len(wasms) != len(wats) {
		t.Errorf("%d .wasm files for %d .wat sources", len(wasms), len(wats))
	}
	wat2wasm, lookErr := exec.LookPath("wat2wasm")
	for _, src := range wats {
		name := strings.TrimSuffix(filepath.Base(src), ".wat")
		committed := Guest(t, name)
		if lookErr != nil {
			continue
		}
		out := filepath.Join(t.TempDir(), name+".wasm")
		args := append(watFlags(t, src), src, "-o", out)
		if msg, err := exec.Command(wat2wasm, args...).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", src, err, msg)
		}
		built, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(built, committed) {
			t.Errorf("testdata/%s.wasm is not what wat2wasm makes of %s: run go generate ./host/platform/runtime/backendtest", name, src)
		}
	}
	if lookErr != nil {
		t.Logf("wat2wasm not installed: the committed builds were not checked against their sources")
	}
}

// watFlags returns the flags a source's header asks wat2wasm for (a line
// ";; wat2wasm flags: …"), as go generate passes them.
func watFlags(t *testing.T, src string) []string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, line := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(line, ";; wat2wasm flags: "); ok {
			flags = append(flags, strings.Fields(f)...)
		}
	}
	return flags
}

// TestCaseNamesAreUnique: each case has a name of its own, so a failure
// or a -run pattern names one case.
func TestCaseNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range append(append([]wasmCase(nil), timedCases...), otherCases...) {
		if seen[c.name] {
			t.Errorf("two Wasm cases named %q", c.name)
		}
		seen[c.name] = true
	}
	for _, c := range nativeCases {
		if seen[c.name] {
			t.Errorf("two cases named %q", c.name)
		}
		seen[c.name] = true
	}
	t.Logf("%d cases", len(seen))
}
