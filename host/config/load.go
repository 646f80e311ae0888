package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
	"github.com/wasmsched/wasmsched/host/internal/yamlcheck"
)

// MaxFileBytes bounds a configuration file (or pipe). Real ones are a few
// KiB; plugin args are the only part that can grow, and 4 MiB leaves them
// room while keeping a mistaken `--config /dev/zero` from eating memory.
const MaxFileBytes = 4 << 20

// Load reads and validates a configuration file: a regular file or a pipe
// of at most MaxFileBytes. Errors name the file and, where known, the
// line ("profiles.yaml:12: profiles[1].plugins.filter.enable: unknown
// field (did you mean \"enabled\"?)").
func Load(path string) (*Configuration, error) {
	b, err := boundedread.ReadFile(path, MaxFileBytes, boundedread.RegularOrPipe, "a configuration file")
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := parse(path, b)
	if err != nil {
		return nil, err
	}
	// Module paths (and a kubeconfig) are relative to the file that names
	// them, so a config and its files can move together.
	for _, ref := range c.AllModules() {
		for _, p := range []*string{&ref.Module.Path, &ref.Module.PullSecret, &ref.Module.CAFile} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(filepath.Dir(path), *p)
			}
		}
	}
	if cc := c.ClientConnection; cc != nil && cc.Kubeconfig != "" && !filepath.IsAbs(cc.Kubeconfig) {
		cc.Kubeconfig = filepath.Join(filepath.Dir(path), cc.Kubeconfig)
	}
	return c, nil
}

// Parse decodes YAML strictly (an unknown field is an error) and validates.
// Errors name the line ("line 12: …"); Load also names the file.
func Parse(b []byte) (*Configuration, error) { return parse("", b) }

// Position says where a field was written, as "file:line" (or "line N",
// or "" when unknown): for errors found after Load, such as a profile
// naming a plugin no module serves. A field that was not written (a
// missing name, say) gets its closest written parent's line.
func (c *Configuration) Position(field string) string {
	line := c.lines.Find(field)
	switch {
	case line > 0 && c.source != "":
		return fmt.Sprintf("%s:%d", c.source, line)
	case line > 0:
		return fmt.Sprintf("line %d", line)
	}
	return c.source
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func parse(file string, b []byte) (*Configuration, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &Error{File: file, Msg: "empty configuration"}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		// yaml.v3 says "yaml: line 3: did not find expected key".
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &Error{File: file, Line: line, Msg: "not valid YAML: " + m[2]}
		}
		return nil, &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if isKubeSchedulerConfiguration(&doc) {
		return parseKube(file, &doc, b)
	}
	lines, problems := yamlcheck.Check(&doc, reflect.TypeFor[Configuration](), map[reflect.Type]yamlcheck.Scalar{
		reflect.TypeFor[Duration](): checkDuration,
	})
	if len(problems) > 0 {
		errs := make(Errors, len(problems))
		for i, p := range problems {
			errs[i] = &Error{File: file, Line: p.Line, Field: p.Path, Msg: p.Msg}
		}
		return nil, errs
	}
	var c Configuration
	if err := sigsyaml.UnmarshalStrict(b, &c); err != nil {
		// The check above should have said it better; this is the net.
		return nil, &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: ")}
	}
	c.source, c.lines = file, lines
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.withVPodPolicyFiles() // vpod policy files, relative to the file
}

func checkDuration(s string) string {
	if _, err := time.ParseDuration(s); err != nil {
		return fmt.Sprintf("%q is not a duration (e.g. 250ms)", s)
	}
	return ""
}
