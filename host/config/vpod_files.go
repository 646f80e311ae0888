package config

import (
	"fmt"
	"path/filepath"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// MaxVPodPolicyFileBytes bounds a policy file: Kubernetes' own limit on a
// ConfigMap, which is what these files usually are.
const MaxVPodPolicyFileBytes = 1 << 20

// policyFile is a policy file as read at load.
type policyFile struct {
	name   string // as written in the configuration
	path   string // resolved against the configuration's directory
	policy *VPodPolicy
}

// withVPodPolicyFiles reads the vpod schedulers' policy files, relative
// to the configuration file's directory (the working directory when the
// configuration came from bytes), so a bad file fails the load with the
// line of the field naming it. It returns c, or nil and every problem.
func (c *Configuration) withVPodPolicyFiles() (*Configuration, error) {
	if c.VPod == nil {
		return c, nil
	}
	dir := "."
	if c.source != "" {
		dir = filepath.Dir(c.source)
	}
	var errs Errors
	for i := range c.VPod.Schedulers {
		s := &c.VPod.Schedulers[i]
		f := VPodSchedulerField(i)
		s.at = &sourceAt{file: c.source, lines: c.lines}
		for _, x := range []struct {
			name, field string
			dst         **policyFile
		}{
			{s.SchedulerPolicyFile, f + ".schedulerPolicyFile", &s.schedFile},
			{s.DeschedulerPolicyFile, f + ".deschedulerPolicyFile", &s.deschedFile},
		} {
			if x.name == "" {
				continue
			}
			pf, err := readPolicyFile(dir, x.name, x.field)
			if err != nil {
				err.File, err.Line = c.source, c.lines.Find(x.field)
				errs = append(errs, err)
				continue
			}
			*x.dst = pf
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// readPolicyFile reads and parses one policy file; the error names field
// and the file (and the line in the file, when known).
func readPolicyFile(dir, name, field string) (*policyFile, *Error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	b, err := boundedread.ReadFile(path, MaxVPodPolicyFileBytes, boundedread.RegularOrPipe, "a vpod policy file")
	if err != nil {
		return nil, &Error{Field: field, Msg: fmt.Sprintf("reading the policy: %v", err)}
	}
	p, perr := parseKnativePolicy(b)
	if perr != nil {
		perr.File = path
		return nil, &Error{Field: field, Msg: perr.Error()}
	}
	for _, es := range [][]VPodPolicyEntry{p.Predicates, p.Priorities} {
		for i := range es {
			es[i].File = path
		}
	}
	return &policyFile{name: name, path: path, policy: p}, nil
}

// VPodPolicyPaths lists the vpod policy files the configuration read
// (resolved against its directory): a change to one changes the
// configuration, so a reload and `simulate --watch` watch them with the
// module files.
func (c *Configuration) VPodPolicyPaths() []string {
	if c == nil || c.VPod == nil {
		return nil
	}
	var ps []string
	for i := range c.VPod.Schedulers {
		s := &c.VPod.Schedulers[i]
		for _, f := range []*policyFile{s.schedFile, s.deschedFile} {
			if f != nil {
				ps = append(ps, f.path)
			}
		}
	}
	return ps
}
