package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The registry round trip (push, pull, wrong password, tampered blob) runs
// against a real registry in test/e2e; these are the refusals made before
// any request.
func TestPluginPushAndPullRefuseBadArguments(t *testing.T) {
	notWasm := filepath.Join(t.TempDir(), "x.wasm")
	if err := os.WriteFile(notWasm, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest := "@sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "push", "registry.example/m" + digest, notWasm}, "names a digest"},
		{[]string{"plugin", "push", "not a ref", notWasm}, "is not a reference"},
		{[]string{"plugin", "push", "registry.example/m:v1", filepath.Join(t.TempDir(), "missing.wasm")}, "missing.wasm"},
		{[]string{"plugin", "push", "registry.example/m:v1", notWasm}, "not a Wasm binary"},
		{[]string{"plugin", "push", "registry.example/m:v1", notWasm, "--username", "me"}, "--username needs --password-stdin"},
		{[]string{"plugin", "pull", "registry.example/m" + digest}, "-o FILE is required"},
		{[]string{"plugin", "pull", "registry.example/m", "-o", "x.wasm"}, "names no tag or digest"},
		{[]string{"plugin", "pull", "registry.example/m:v1", "-o", "x.wasm", "--password-stdin"}, "--password-stdin needs --username"},
	} {
		out, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q\n%s", tc.args, err, tc.want, out)
		}
	}
}
