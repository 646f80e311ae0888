package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
)

// writeConfig writes text to dir/profiles.yaml and returns the path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profiles.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // each a substring; FILE is replaced by the path
	}{
		{"typo with suggestion", header + `profiles:
- schedulerName: a
- schedulerName: b
  plugins:
    filter:
      enable: [{name: X}]
`, []string{`FILE:8: profiles[1].plugins.filter.enable: unknown field (did you mean "enabled"?)`}},
		{"bad quantity", header + `modules:
- name: m
  path: m.wasm
  memoryLimit: lots
profiles: [{schedulerName: a}]
`, []string{`FILE:6: modules[0].memoryLimit: "lots" is not a quantity (e.g. 64Mi or 500m)`}},
		{"wrong type", header + "profiles:\n- schedulerName: a\n  plugins: [filter]\n",
			[]string{`FILE:5: profiles[0].plugins: want an object, not a list`}},
		{"string for an integer", header + "percentageOfNodesToScore: half\nprofiles: [{schedulerName: a}]\n",
			[]string{`FILE:3: percentageOfNodesToScore: "half" is not an integer`}},
		{"int32 overflow", header + "profiles:\n- schedulerName: a\n  plugins: {score: {enabled: [{name: X, weight: 4294967297}]}}\n",
			[]string{`FILE:5: profiles[0].plugins.score.enabled[0].weight: 4294967297 is out of range (it must fit a 32-bit integer)`}},
		{"every problem at once", header + "colour: blue\nprofiles:\n- schedulerNam: a\n",
			[]string{`FILE:3: colour: unknown field`, `FILE:5: profiles[0].schedulerNam: unknown field (did you mean "schedulerName"?)`}},
		{"validation keeps its message and gains the line", header + "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: X\n        weight: 101\n",
			[]string{`FILE:9: profiles[0].plugins.score.enabled[0].weight: 101 is outside 0..100`}},
		{"missing field points at its parent", header + "modules:\n- name: m\nprofiles: [{schedulerName: a}]\n",
			[]string{`FILE:4: modules[0].path: must not be empty`}},
		{"not yaml", header + "profiles: [\n", []string{`FILE:3: not valid YAML:`}},
		{"duplicate key", header + "profiles: [{schedulerName: a}]\nprofiles: [{schedulerName: b}]\n",
			[]string{`FILE:4: profiles: duplicate field (also on line 3)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml)
			_, err := Load(path)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				w = strings.ReplaceAll(w, "FILE", path)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestNumericFieldsAreBounded(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"pool size that panicked makechan", "modules: [{name: m, path: a, poolSize: 4611686018427387904}]\nprofiles: [{schedulerName: a}]",
			"modules[0].poolSize: 4611686018427387904 is outside 0..256"},
		{"negative pool size", "modules: [{name: m, path: a, poolSize: -1}]\nprofiles: [{schedulerName: a}]",
			"modules[0].poolSize: -1 is outside 0..256"},
		{"initial backoff that wrapped", "podInitialBackoffSeconds: 9223372036854775807\nprofiles: [{schedulerName: a}]",
			"podInitialBackoffSeconds: 9223372036854775807 is outside 1..86400 seconds"},
		{"max backoff that wrapped", "podMaxBackoffSeconds: 10000000000\nprofiles: [{schedulerName: a}]",
			"podMaxBackoffSeconds: 10000000000 is outside 1..86400 seconds"},
		{"negative max backoff alone", "podMaxBackoffSeconds: -5\nprofiles: [{schedulerName: a}]",
			"podMaxBackoffSeconds: -5 is outside 1..86400 seconds"},
		{"backoff past int64", "podMaxBackoffSeconds: 99999999999999999999\nprofiles: [{schedulerName: a}]",
			"podMaxBackoffSeconds: 99999999999999999999 is out of range"},
		{"call timeout overflow", "modules: [{name: m, path: a, callTimeout: 9999999999h}]\nprofiles: [{schedulerName: a}]",
			`modules[0].callTimeout: "9999999999h" is not a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	c, err := Parse([]byte(header + "podInitialBackoffSeconds: 86400\npodMaxBackoffSeconds: 86400\nmodules: [{name: m, path: a, poolSize: 256}]\nprofiles: [{schedulerName: a}]"))
	if err != nil {
		t.Fatalf("the maxima themselves are refused: %v", err)
	}
	if d := time.Duration(*c.PodMaxBackoffSeconds) * time.Second; d != 24*time.Hour {
		t.Fatalf("max backoff %v", d)
	}
}

func TestLoadRefusesFilesThatAreNotBoundedRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := specialfiles.FIFO(t, dir, "fifo")
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(header+"# "+strings.Repeat("x", MaxFileBytes)+"\nprofiles: [{schedulerName: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"device", "/dev/zero", "/dev/zero: is a character device, not a regular file or a pipe"},
		{"directory", dir, "is a directory"},
		{"too large", big, "larger than 4 MiB, the limit for a configuration file"},
		// A FIFO nobody writes to must not block the open: it reads empty.
		{"fifo without writer", fifo, "empty configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := specialfiles.Load(t, 10*time.Second, "Load", func() error { _, err := Load(tc.path); return err })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if tc.name == "too large" && !boundedread.IsTooLarge(err) {
				t.Fatalf("err %v is not a TooLargeError", err)
			}
		})
	}
}

func TestPositionNamesWhereAFieldWasWritten(t *testing.T) {
	path := writeConfig(t, header+"profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: Nope\n")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Position("profiles[0].plugins.filter.enabled[0].name"), path+":8"; got != want {
		t.Fatalf("position = %q, want %q", got, want)
	}
	if got, want := c.Position("profiles[0].plugins.filter.enabled[0].weight"), path+":8"; got != want {
		t.Fatalf("position of an unwritten field = %q, want its parent's %q", got, want)
	}
	var e *Error
	_, err = Parse([]byte(header + "profiles: [{schedulerName: ''}]"))
	if !errors.As(err, &e) || e.Line != 3 || e.Field != "profiles[0].schedulerName" {
		t.Fatalf("err = %#v", err)
	}
}
