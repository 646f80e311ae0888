package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const digestRef = "registry.example:5000/policies/mod@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestImageModulesParse(t *testing.T) {
	pin := strings.Repeat("ab", 32)
	c, err := Parse([]byte(header + `
modules:
- name: bydigest
  image: ` + digestRef + `
- name: pinnedtag
  image: registry.example/mod:v1
  sha256: ` + pin + `
  failStrategy: FailOpen
- name: floating
  image: registry.example/mod:latest
  pullPolicy: Always
profiles: [{schedulerName: a}]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		policy PullPolicy
		fail   FailStrategy
	}{{PullIfNotPresent, FailClose}, {PullIfNotPresent, FailOpen}, {PullAlways, FailClose}}
	for i, w := range want {
		m := &c.Modules[i]
		if m.EffectivePullPolicy() != w.policy || m.EffectiveFailStrategy() != w.fail {
			t.Errorf("modules[%d]: policy %s, strategy %s; want %s, %s", i, m.EffectivePullPolicy(), m.EffectiveFailStrategy(), w.policy, w.fail)
		}
	}
	src, err := ParseImage(digestRef)
	if err != nil || src.Registry != "registry.example:5000" || src.Repository != "policies/mod" || src.Tag != "" || src.String() != digestRef {
		t.Fatalf("ParseImage: %+v, %v", src, err)
	}
}

func TestImageModuleErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, module, want string }{
		{"path and image", "{name: m, path: m.wasm, image: '" + digestRef + "'}", "modules[0].image: a module comes from a path or an image, not both"},
		{"not a reference", "{name: m, image: 'not a ref'}", `modules[0].image: "not a ref" is not an image reference`},
		{"no tag or digest", "{name: m, image: registry.example/mod}", "modules[0].image: \"registry.example/mod\" names no tag or digest"},
		{"unpinned tag", "{name: m, image: registry.example/mod:v1}", `modules[0].image: the tag "v1" is not pinned`},
		{"unpinned tag, IfNotPresent", "{name: m, image: registry.example/mod:v1, pullPolicy: IfNotPresent}", `modules[0].image: the tag "v1" is not pinned`},
		{"bad pull policy", "{name: m, image: '" + digestRef + "', pullPolicy: Sometimes}", `modules[0].pullPolicy: must be IfNotPresent, Always or Never, not "Sometimes"`},
		{"bad fail strategy", "{name: m, image: '" + digestRef + "', failStrategy: Ignore}", `modules[0].failStrategy: must be FailClose or FailOpen, not "Ignore"`},
		{"pull secret without image", "{name: m, path: m.wasm, pullSecret: s.json}", "modules[0].pullSecret: applies to a module from an image"},
		{"fail strategy without image", "{name: m, path: m.wasm, failStrategy: FailOpen}", "modules[0].failStrategy: applies to a module from an image"},
		{"bad pin", "{name: m, image: registry.example/mod:v1, sha256: abc}", "modules[0].sha256: must be 64 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + "modules:\n- " + tc.module + "\nprofiles: [{schedulerName: a}]\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestImageModuleFilesAreRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte(header+"modules:\n- {name: m, image: '"+digestRef+"', pullSecret: secret/.dockerconfigjson, caFile: ca.crt}\nprofiles: [{schedulerName: a}]\n"), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Modules[0]; m.PullSecret != filepath.Join(dir, "secret/.dockerconfigjson") || m.CAFile != filepath.Join(dir, "ca.crt") {
		t.Fatalf("%+v", m)
	}
}
