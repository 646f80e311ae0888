package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbase "k8s.io/component-base/config/v1alpha1"
	kubev1 "k8s.io/kube-scheduler/config/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/wasmsched/wasmsched/host/internal/yamlcheck"
)

// kube-scheduler's configuration document, which Load accepts as well as
// its own: the document's apiVersion decides.
const (
	KubeSchedulerAPIGroup   = "kubescheduler.config.k8s.io"
	KubeSchedulerAPIVersion = KubeSchedulerAPIGroup + "/v1"
	KubeSchedulerKind       = "KubeSchedulerConfiguration"
)

// kubeDefaultParallelism is kube-scheduler's default parallelism.
const kubeDefaultParallelism = 16

// Warnings are what a KubeSchedulerConfiguration asked for that wasmsched
// leaves out rather than refuses (kube-scheduler's default volume and DRA
// plugins, settings with no effect here), one sentence each, for the
// caller to log once. Nil for wasmsched's own format.
func (c *Configuration) Warnings() []string { return c.warnings }

// FromKubeScheduler reports whether the configuration was read from a
// KubeSchedulerConfiguration.
func (c *Configuration) FromKubeScheduler() bool { return c.kubeFormat }

// isKubeSchedulerConfiguration reports whether a document is kube-
// scheduler's (any version of its group, or its kind), so that it is
// converted, or refused for its version, rather than checked as ours.
func isKubeSchedulerConfiguration(doc *yaml.Node) bool {
	apiVersion, kind := typeMeta(doc)
	return strings.HasPrefix(apiVersion, KubeSchedulerAPIGroup+"/") || kind == KubeSchedulerKind
}

// typeMeta reads a document's top-level apiVersion and kind.
func typeMeta(doc *yaml.Node) (apiVersion, kind string) {
	if n := child(doc, "apiVersion"); n != nil {
		apiVersion = n.Value
	}
	if n := child(doc, "kind"); n != nil {
		kind = n.Value
	}
	return apiVersion, kind
}

// typeMetaLines are the lines of a document's apiVersion and kind, for
// errors found before the whole document is checked.
func typeMetaLines(doc *yaml.Node) yamlcheck.Lines {
	lines := yamlcheck.Lines{}
	for _, key := range []string{"apiVersion", "kind"} {
		if n := child(doc, key); n != nil {
			lines[key] = n.Line
		}
	}
	return lines
}

// parseKube reads a KubeSchedulerConfiguration: strictly, with kube-
// scheduler's v1 schema (its plugins' args too), then converted into a
// Configuration with the same field paths, so later errors (and their
// lines) point into the file as written.
func parseKube(file string, doc *yaml.Node, b []byte) (*Configuration, error) {
	k := &kubeConverter{file: file, lines: typeMetaLines(doc)}
	apiVersion, kind := typeMeta(doc)
	if apiVersion != KubeSchedulerAPIVersion {
		k.fail("apiVersion", "%q is not supported: wasmsched reads %s (v1beta2 and v1beta3 are gone from kube-scheduler since 1.28 and 1.29; migrate the file to v1)",
			apiVersion, KubeSchedulerAPIVersion)
	}
	if kind != KubeSchedulerKind {
		k.fail("kind", "must be %q for apiVersion %s, not %q", KubeSchedulerKind, KubeSchedulerAPIVersion, kind)
	}
	if len(k.errs) > 0 {
		return nil, k.errs
	}
	scalars := map[reflect.Type]yamlcheck.Scalar{reflect.TypeFor[metav1.Duration](): checkDuration}
	lines, problems := yamlcheck.Check(doc, reflect.TypeFor[kubev1.KubeSchedulerConfiguration](), scalars)
	k.lines = lines
	k.problems(problems, "")
	if len(k.errs) > 0 {
		return nil, k.errs
	}
	var kc kubev1.KubeSchedulerConfiguration
	if err := sigsyaml.UnmarshalStrict(b, &kc); err != nil {
		// The check above should have said it better; this is the net.
		return nil, &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: ")}
	}
	k.checkArgsSchemas(doc, &kc, scalars)
	c := k.convert(&kc)
	if len(k.errs) > 0 {
		return nil, k.errs
	}
	c.source, c.lines, c.warnings, c.kubeFormat = file, k.lines, k.warnings, true
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// After Validate, whose message says how the queue sorts differ when
	// they do: this one is for sections that differ only as written.
	k.sameQueueSortSections(kc.Profiles)
	if len(k.errs) > 0 {
		return nil, k.errs
	}
	return c, nil
}

// sameQueueSortSections is kube-scheduler's validateCommonQueueSort: every
// profile's queueSort section must equal the first's as written (names,
// weights; disabled names), even where they would sort alike, since
// kube-scheduler compares the sections, not their effect.
func (k *kubeConverter) sameQueueSortSections(profiles []kubev1.KubeSchedulerProfile) {
	section := func(p *kubev1.KubeSchedulerProfile) string {
		if p.Plugins == nil {
			return ""
		}
		var b strings.Builder
		for _, e := range p.Plugins.QueueSort.Enabled {
			fmt.Fprintf(&b, "+%s", e.Name)
			if e.Weight != nil {
				fmt.Fprintf(&b, "/%d", *e.Weight)
			}
		}
		for _, d := range p.Plugins.QueueSort.Disabled {
			fmt.Fprintf(&b, "-%s", d.Name)
		}
		return b.String()
	}
	for i := 1; i < len(profiles); i++ {
		if section(&profiles[i]) != section(&profiles[0]) {
			k.fail(fmt.Sprintf("profiles[%d].plugins.queueSort", i), "must be the same for all profiles: it differs from profiles[0]'s as written "+
				"(kube-scheduler compares the queueSort sections, so write the same one in every profile, or none)")
		}
	}
}

// kubeConverter collects the conversion's errors and warnings.
type kubeConverter struct {
	file     string
	lines    yamlcheck.Lines
	errs     Errors
	warnings []string
}

func (k *kubeConverter) fail(field, format string, args ...any) {
	k.errs = append(k.errs, &Error{File: k.file, Line: k.lines.Find(field), Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (k *kubeConverter) warn(format string, args ...any) {
	k.warnings = append(k.warnings, fmt.Sprintf(format, args...))
}

// problems records yamlcheck's findings, their paths under prefix.
func (k *kubeConverter) problems(ps []yamlcheck.Problem, prefix string) {
	for _, p := range ps {
		path := p.Path
		if prefix != "" {
			path = joinPath(prefix, path)
		}
		k.errs = append(k.errs, &Error{File: k.file, Line: p.Line, Field: path, Msg: p.Msg})
	}
}

func joinPath(prefix, path string) string {
	switch {
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

// checkArgsSchemas checks every pluginConfig args against its plugin's
// upstream args type, so a misspelt field is refused with its path and
// line, as anywhere else in the file.
func (k *kubeConverter) checkArgsSchemas(doc *yaml.Node, kc *kubev1.KubeSchedulerConfiguration, scalars map[reflect.Type]yamlcheck.Scalar) {
	profiles := child(doc, "profiles")
	for i := range kc.Profiles {
		configs := child(item(profiles, i), "pluginConfig")
		for j, pc := range kc.Profiles[i].PluginConfig {
			kp, ok := kubePlugins[pc.Name]
			node := child(item(configs, j), "args")
			if !ok || kp.args == nil || node == nil {
				continue
			}
			prefix := fmt.Sprintf("profiles[%d].pluginConfig[%d].args", i, j)
			lines, problems := yamlcheck.Check(node, kp.args, scalars)
			for p, l := range lines {
				k.lines[joinPath(prefix, p)] = l
			}
			k.problems(problems, prefix)
			if len(problems) > 0 || len(pc.Args.Raw) == 0 {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(pc.Args.Raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(reflect.New(kp.args).Interface()); err != nil {
				k.fail(prefix, "not valid %sArgs: %v", pc.Name, err)
			}
		}
	}
}

// child returns a mapping's value for key (aliases followed), or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = deref(n.Content[0])
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

// item returns a sequence's i-th element (aliases followed), or nil.
func item(n *yaml.Node, i int) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return nil
	}
	return deref(n.Content[i])
}

func deref(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode && depth < 100; depth++ {
		n = n.Alias
	}
	return n
}

// convert maps the document onto a Configuration, refusing (with the
// field named) what wasmsched cannot honour.
func (k *kubeConverter) convert(kc *kubev1.KubeSchedulerConfiguration) *Configuration {
	c := &Configuration{APIVersion: APIVersion, Kind: Kind,
		PercentageOfNodesToScore: kc.PercentageOfNodesToScore,
		PodInitialBackoffSeconds: kc.PodInitialBackoffSeconds,
		PodMaxBackoffSeconds:     kc.PodMaxBackoffSeconds,
	}
	if len(kc.Extenders) > 0 {
		k.fail("extenders", "wasmsched calls no scheduler extenders: write the extender's filter and prioritize logic as a Wasm plugin (README, \"Writing a plugin\") "+
			"and use wasmsched's own format (%s) to load it, or leave the pods that need the extender to kube-scheduler", APIVersion)
	}
	if p := kc.Parallelism; p != nil {
		switch {
		case *p <= 0:
			k.fail("parallelism", "%d must be positive", *p)
		case *p != kubeDefaultParallelism:
			k.warn("parallelism: %d is ignored: wasmsched checks nodes in batches per Wasm call and sizes its instance pools per module (modules[].poolSize), not with a goroutine count", *p)
		}
	}
	if kc.DelayCacheUntilActive {
		k.warn("delayCacheUntilActive: ignored: wasmsched's standbys always fill their caches before they lead, so a takeover schedules at once")
	}
	if on := func(b *bool) bool { return b != nil && *b }; on(kc.EnableProfiling) || on(kc.EnableContentionProfiling) {
		k.warn("enableProfiling: serve exposes /debug/pprof/ only with --profiling")
	}
	c.LeaderElection = k.leaderElection(&kc.LeaderElection)
	c.ClientConnection = clientConnection(&kc.ClientConnection)

	profiles := kc.Profiles
	if len(profiles) == 0 {
		profiles = []kubev1.KubeSchedulerProfile{{}}
	}
	var dropped []string // profiles that had kube's default volume/DRA plugins
	for i := range profiles {
		kp := &profiles[i]
		f := fmt.Sprintf("profiles[%d]", i)
		p := Profile{PercentageOfNodesToScore: kp.PercentageOfNodesToScore}
		switch {
		case kp.SchedulerName != nil:
			p.SchedulerName = *kp.SchedulerName
		case len(profiles) == 1:
			p.SchedulerName = DefaultSchedulerName
		default:
			k.fail(f+".schedulerName", "must be set when there is more than one profile")
		}
		if kp.Plugins != nil {
			p.Plugins = k.plugins(f+".plugins", kp.Plugins)
		}
		p.PluginConfig = k.pluginConfig(f, kp.PluginConfig)
		if defaultsKept(kp.Plugins) {
			dropped = append(dropped, p.SchedulerName)
		}
		c.Profiles = append(c.Profiles, p)
	}
	if len(dropped) > 0 {
		k.warn("profiles %s: kube-scheduler's default plugins %s are left out: wasmsched has no volume or dynamic resource allocation plugins, "+
			"so pods' PersistentVolumeClaims and ResourceClaims are not considered; schedule such pods with kube-scheduler, "+
			"or list these plugins under plugins.multiPoint.disabled to say you know",
			strings.Join(dropped, ", "), strings.Join(kubeDefaultsMissing, ", "))
	}
	return c
}

// defaultsKept reports whether any of kube's default volume/DRA plugins
// would be in a profile's multiPoint set (none disabled them).
func defaultsKept(p *kubev1.Plugins) bool {
	if p == nil {
		return true
	}
	for _, name := range kubeDefaultsMissing {
		if !kubeDisables(p.MultiPoint, name) {
			return true
		}
	}
	return false
}

func kubeDisables(s kubev1.PluginSet, name string) bool {
	for _, d := range s.Disabled {
		if d.Name == name || d.Name == "*" {
			return true
		}
	}
	return false
}

// leaderElection keeps what the file wrote (nil when nothing was).
func (k *kubeConverter) leaderElection(in *componentbase.LeaderElectionConfiguration) *LeaderElection {
	out := &LeaderElection{LeaderElect: in.LeaderElect,
		LeaseDuration: Duration{in.LeaseDuration.Duration}, RenewDeadline: Duration{in.RenewDeadline.Duration}, RetryPeriod: Duration{in.RetryPeriod.Duration},
		ResourceLock: in.ResourceLock, ResourceName: in.ResourceName, ResourceNamespace: in.ResourceNamespace}
	if *out == (LeaderElection{}) {
		return nil
	}
	if out.ResourceName == kubev1.SchedulerDefaultLockObjectName && (out.ResourceNamespace == "" || out.ResourceNamespace == kubev1.SchedulerDefaultLockObjectNamespace) {
		k.warn("leaderElection.resourceName: %q is kube-scheduler's own Lease: wasmsched schedules only while it holds it, that is while no kube-scheduler does; "+
			"name a Lease of its own to run both side by side", out.ResourceName)
	}
	return out
}

// clientConnection keeps what the file wrote (nil when nothing was);
// kube's 0 QPS or burst means its default, which serve's flags supply.
func clientConnection(in *componentbase.ClientConnectionConfiguration) *ClientConnection {
	out := &ClientConnection{Kubeconfig: in.Kubeconfig, AcceptContentTypes: in.AcceptContentTypes, ContentType: in.ContentType}
	if in.QPS != 0 {
		qps := in.QPS
		out.QPS = &qps
	}
	if in.Burst != 0 {
		burst := in.Burst
		out.Burst = &burst
	}
	if *out == (ClientConnection{}) {
		return nil
	}
	return out
}

// plugins converts a profile's plugin sets (f is "profiles[i].plugins").
// Entries keep their index wherever a later check could name them;
// SchedulingGates, dropped from multiPoint.enabled, is the one exception,
// so every multiPoint entry is checked here, by its written index.
func (k *kubeConverter) plugins(f string, in *kubev1.Plugins) *Plugins {
	out := &Plugins{}
	for _, pt := range []struct {
		name string
		in   *kubev1.PluginSet
		out  *PluginSet
	}{
		{"multiPoint", &in.MultiPoint, &out.MultiPoint}, {"queueSort", &in.QueueSort, &out.QueueSort},
		{"preFilter", &in.PreFilter, &out.PreFilter}, {"filter", &in.Filter, &out.Filter},
		{"postFilter", &in.PostFilter, &out.PostFilter}, {"preScore", &in.PreScore, &out.PreScore},
		{"score", &in.Score, &out.Score}, {"reserve", &in.Reserve, &out.Reserve},
		{"permit", &in.Permit, &out.Permit}, {"preBind", &in.PreBind, &out.PreBind},
		{"bind", &in.Bind, &out.Bind}, {"postBind", &in.PostBind, &out.PostBind},
	} {
		pf := f + "." + pt.name
		weighted := pt.name == "multiPoint" || pt.name == "score"
		k.enabledOnce(pf, pt.name, pt.in.Enabled, weighted)
		for i, e := range pt.in.Enabled {
			ef := fmt.Sprintf("%s.enabled[%d]", pf, i)
			kp, ok := k.enabledPlugin(ef, e.Name)
			if !ok {
				continue
			}
			if e.Name == kubeSchedulingGates {
				if pt.name != "multiPoint" {
					k.fail(ef+".name", "SchedulingGates is a preEnqueue plugin; wasmsched always honours scheduling gates (gated pods wait outside the queue), so it needs no entry")
				}
				continue
			}
			p := Plugin{Name: e.Name}
			if weighted && kp.score {
				// kube-scheduler gives an enabled plugin without a weight
				// (or with 0) the weight 1, even one whose default is
				// higher: wasmsched's format would keep the default's.
				p.Weight = 1
				if e.Weight != nil && *e.Weight != 0 {
					p.Weight = *e.Weight
				}
				if p.Weight < 1 || p.Weight > MaxWeight {
					k.fail(ef+".weight", "%d is outside 1..%d (wasmsched caps score weights at %d)", p.Weight, MaxWeight, MaxWeight)
				}
			}
			pt.out.Enabled = append(pt.out.Enabled, p)
		}
		for i, d := range pt.in.Disabled {
			switch kp := kubePlugins[d.Name]; {
			case d.Name == "":
				k.fail(fmt.Sprintf("%s.disabled[%d].name", pf, i), "must name a plugin or be \"*\"")
			case d.Name == kubeDynamicResources:
				// wasmsched's stand-in says what upstream's says at
				// PostFilter; disabling it drops that.
				pt.out.Disabled = append(pt.out.Disabled, Plugin{Name: d.Name})
			case kp.missing != nil:
				// Never enabled here: nothing to disable.
			case d.Name == kubeSchedulingGates:
				k.warn("%s.disabled[%d]: SchedulingGates cannot be disabled: wasmsched always keeps gated pods out of the queue until their gates are removed", pf, i)
			default:
				pt.out.Disabled = append(pt.out.Disabled, Plugin{Name: d.Name})
			}
		}
	}
	k.preEnqueue(f+".preEnqueue", &in.PreEnqueue)
	k.podGroupPoints(f, in)
	return out
}

// podGroupPoints refuses kube-scheduler v1.37's pod group extension
// points (f is "profiles[i].plugins"): wasmsched schedules pods one at a
// time and has no pod group cycle to run them in, so a list there, even
// an empty one, would be ignored. kube-scheduler runs them only with its
// GenericWorkload or TopologyAwareWorkloadScheduling feature gates, off
// by default.
func (k *kubeConverter) podGroupPoints(f string, in *kubev1.Plugins) {
	for _, pt := range []struct {
		name string
		set  *kubev1.PluginSet
	}{{"placementGenerate", &in.PlacementGenerate}, {"placementScore", &in.PlacementScore}, {"podGroupPostFilter", &in.PodGroupPostFilter}} {
		if _, written := k.lines[f+"."+pt.name]; !written && len(pt.set.Enabled) == 0 && len(pt.set.Disabled) == 0 {
			continue
		}
		k.fail(f+"."+pt.name, "wasmsched has no pod group (workload) scheduling cycle, so it runs no %s plugins: remove this section "+
			"(kube-scheduler runs it only with its GenericWorkload or TopologyAwareWorkloadScheduling feature gates, off by default)", pt.name)
	}
}

// enabledOnce refuses a plugin enabled twice in one point's list (pf is
// its path), as kube-scheduler does, by the entries' written indices
// (the conversion drops SchedulingGates entries, so the converted lists'
// indices would be off). weighted: the point's weights count, so the
// first entry's is named.
func (k *kubeConverter) enabledOnce(pf, point string, enabled []kubev1.Plugin, weighted bool) {
	first := map[string]int{}
	for i, e := range enabled {
		if e.Name == "" || e.Name == "*" {
			continue // enabledPlugin refuses it
		}
		j, dup := first[e.Name]
		if !dup {
			first[e.Name] = i
			continue
		}
		var w int32
		if weighted && enabled[j].Weight != nil {
			w = *enabled[j].Weight
		}
		k.fail(fmt.Sprintf("%s.enabled[%d]", pf, i), "%s", alreadyRegistered(e.Name, point, j, w))
	}
}

// enabledPlugin looks up a plugin a file enables at ef, refusing the
// unknown and the missing.
func (k *kubeConverter) enabledPlugin(ef, name string) (kubePlugin, bool) {
	kp, ok := kubePlugins[name]
	switch {
	case name == "" || name == "*":
		k.fail(ef+".name", "must name a plugin")
		return kp, false
	case !ok:
		k.fail(ef+".name", "%q is not one of kube-scheduler's in-tree plugins, and a %s names no Wasm modules: "+
			"build the plugin as a Wasm module and load it with wasmsched's own format (%s)", name, KubeSchedulerKind, APIVersion)
		return kp, false
	case kp.missing != nil:
		k.fail(ef+".name", "wasmsched has no %s, so %s cannot be enabled: remove it from this list; %s",
			kp.missing.what, name, kp.missing.workaround)
		return kp, false
	}
	return kp, true
}

// preEnqueue checks the preEnqueue set, which wasmsched has no list for:
// its gates come with their plugins (SchedulingGates always; DefaultPreemption's
// while a preemptor's victims go).
func (k *kubeConverter) preEnqueue(f string, s *kubev1.PluginSet) {
	k.enabledOnce(f, "preEnqueue", s.Enabled, false)
	for i, e := range s.Enabled {
		ef := fmt.Sprintf("%s.enabled[%d]", f, i)
		if _, ok := k.enabledPlugin(ef, e.Name); !ok {
			continue
		}
		if e.Name != kubeSchedulingGates && e.Name != kubeDefaultPreemption {
			k.fail(ef+".name", "%s has no preEnqueue point in wasmsched (only SchedulingGates and DefaultPreemption do, and they need no entry)", e.Name)
		}
	}
	if len(s.Disabled) > 0 {
		k.warn("%s.disabled: ignored: wasmsched's queue gates come with their plugins (SchedulingGates always, DefaultPreemption's while a preemptor's victims go) and cannot be disabled on their own", f)
	}
}

// pluginConfig converts a profile's pluginConfig, dropping (with a
// warning) the args of plugins wasmsched lacks and removing the args'
// apiVersion and kind, which kube-scheduler checks and plugins never read.
// Everything an entry can be refused for without running its plugin is
// checked here, by its written index; only a plugin's own verdict on its
// args (when profiles are built) counts the kept entries, and it names
// the plugin.
func (k *kubeConverter) pluginConfig(f string, in []kubev1.PluginConfig) []PluginConfig {
	var out []PluginConfig
	seen := map[string]int{}
	for j, pc := range in {
		pf := fmt.Sprintf("%s.pluginConfig[%d]", f, j)
		if pc.Name == "" {
			k.fail(pf+".name", "must not be empty")
			continue
		}
		if prev, dup := seen[pc.Name]; dup {
			k.fail(pf+".name", "duplicate %q (also pluginConfig[%d])", pc.Name, prev)
			continue
		}
		seen[pc.Name] = j
		kp, ok := kubePlugins[pc.Name]
		switch {
		case !ok:
			k.fail(pf+".name", "%q is not one of kube-scheduler's in-tree plugins, and a %s names no Wasm modules: "+
				"load out-of-tree plugins with wasmsched's own format (%s)", pc.Name, KubeSchedulerKind, APIVersion)
			continue
		case kp.removed:
			k.fail(pf, "%q was invalid in version %q (%s is version %q): kube-scheduler removed the plugin and refuses its pluginConfig; remove this entry",
				pc.Name, KubeSchedulerAPIVersion, KubeSchedulerKind, KubeSchedulerAPIVersion)
			continue
		case kp.missing != nil:
			k.warn("%s: the args of %s are ignored: wasmsched has no %s", pf, pc.Name, kp.missing.what)
			continue
		case pc.Name == kubeSchedulingGates:
			k.warn("%s: the args of SchedulingGates are ignored: wasmsched always honours scheduling gates", pf)
			continue
		}
		args, ok := k.stripTypeMeta(pf+".args", pc.Name, pc.Args.Raw)
		if !ok {
			continue
		}
		out = append(out, PluginConfig{Name: pc.Name, Args: args})
	}
	return out
}

// stripTypeMeta checks args' apiVersion and kind, when written, and
// returns the args without them.
func (k *kubeConverter) stripTypeMeta(f, plugin string, raw []byte) (json.RawMessage, bool) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, true
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		k.fail(f, "want an object: %v", err)
		return nil, false
	}
	ok := true
	if v, has := fields["apiVersion"]; has {
		var s string
		if json.Unmarshal(v, &s) != nil || s != KubeSchedulerAPIVersion {
			k.fail(f+".apiVersion", "must be %q, not %s", KubeSchedulerAPIVersion, v)
			ok = false
		}
	}
	if v, has := fields["kind"]; has {
		var s string
		if json.Unmarshal(v, &s) != nil || s != plugin+"Args" {
			k.fail(f+".kind", "must be %q for plugin %s, not %s", plugin+"Args", plugin, v)
			ok = false
		}
	}
	delete(fields, "apiVersion")
	delete(fields, "kind")
	if !ok || len(fields) == 0 {
		return nil, ok
	}
	b, err := json.Marshal(fields) // encoding/json sorts map keys
	if err != nil {
		k.fail(f, "%v", err)
		return nil, false
	}
	return b, true
}
