package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
)

// The Kubernetes releases serve is tested against (README: "Kubernetes
// versions"; the e2e suite runs on each). An API server older than
// OldestKubernetes is refused at start: serve follows kube-scheduler
// v1.37, whose accounting of pod resources and conditions assumes fields
// that are GA (always on) only from 1.35. A newer one is accepted with a
// warning, as long as every API serve calls is there.
const (
	OldestKubernetes = "1.35"
	NewestKubernetes = "1.37"
)

// apiNeed is one API serve calls, with the first Kubernetes release that
// serves it as GA, so a refusal can say what is missing, why serve
// needs it and which release has it.
type apiNeed struct {
	groupVersion string // as discovery names it: "v1", "policy/v1"
	resource     string // "pods", or a subresource: "pods/binding"
	// kind is the group/version of the subresource's body when discovery
	// states it (pods/eviction takes a policy/v1 Eviction); empty: not checked.
	kind  string
	why   string
	since string
}

// serveNeeds are the APIs every serve calls. Serve watches no storage or
// resource.k8s.io API (the volume and DRA plugins are not implemented),
// and metrics.k8s.io is optional (eviction policies get no usage data
// without it), so neither is here.
var serveNeeds = []apiNeed{
	{groupVersion: "v1", resource: "pods", why: "watches pending and bound pods", since: "1.0"},
	{groupVersion: "v1", resource: "pods/binding", why: "binds pods to nodes", since: "1.0"},
	{groupVersion: "v1", resource: "pods/status", why: "patches the PodScheduled and DisruptionTarget conditions and nominatedNodeName", since: "1.0"},
	{groupVersion: "v1", resource: "pods/eviction", kind: "policy/v1", why: "evicts pods through PodDisruptionBudgets (policy/v1 Eviction)", since: "1.22"},
	{groupVersion: "v1", resource: "nodes", why: "watches nodes", since: "1.0"},
	{groupVersion: "v1", resource: "namespaces", why: "watches namespace labels for affinity namespaceSelector", since: "1.0"},
	{groupVersion: "v1", resource: "events", why: "records Scheduled and FailedScheduling Events", since: "1.0"},
	{groupVersion: "v1", resource: "services", why: "reads Services for default spreading", since: "1.0"},
	{groupVersion: "v1", resource: "replicationcontrollers", why: "reads ReplicationControllers for default spreading", since: "1.0"},
	{groupVersion: "apps/v1", resource: "replicasets", why: "reads ReplicaSets for default spreading", since: "1.9"},
	{groupVersion: "apps/v1", resource: "statefulsets", why: "reads StatefulSets for default spreading and vpods", since: "1.9"},
	{groupVersion: "policy/v1", resource: "poddisruptionbudgets", why: "watches PodDisruptionBudgets for preemption and eviction", since: "1.21"},
	{groupVersion: "scheduling.k8s.io/v1", resource: "priorityclasses", why: "watches PriorityClasses for preemption policy", since: "1.14"},
}

// leaderNeed is what leader election adds.
var leaderNeed = apiNeed{groupVersion: "coordination.k8s.io/v1", resource: "leases", why: "holds the leader election Lease", since: "1.14"}

// APIServer is what CheckAPIServer found: the server's version as it
// reports it, and what is worth a warning but does not stop serve.
type APIServer struct {
	Version  string
	Warnings []string
}

// CheckAPIServer asks the API server's discovery for its version and for
// every API serve calls (the Lease API too when leaderElection is set),
// so a server serve cannot work with is refused at start with one error
// naming each missing API, what serve does with it and the release that
// brought it, instead of failing later in an informer or a bind. An
// unreadable version or a release newer than NewestKubernetes is only a
// warning: the APIs decide.
func CheckAPIServer(ctx context.Context, d discovery.DiscoveryInterface, leaderElection bool) (APIServer, error) {
	dc := discovery.ToDiscoveryInterfaceWithContext(d)
	var out APIServer
	info, err := dc.ServerVersionWithContext(ctx)
	if err != nil {
		return out, fmt.Errorf("read the API server's version (GET /version): %w", err)
	}
	out.Version = info.GitVersion
	oldest := utilversion.MustParseGeneric(OldestKubernetes)
	newest := utilversion.MustParseGeneric(NewestKubernetes)
	v := serverVersion(info.GitVersion, info.Major, info.Minor)
	switch {
	case v == nil:
		out.Warnings = append(out.Warnings, fmt.Sprintf("cannot tell the API server's release from version %q (major %q, minor %q); checking its APIs only",
			info.GitVersion, info.Major, info.Minor))
	case v.LessThan(oldest):
		return out, fmt.Errorf("kube-apiserver %s is older than %s, the oldest release wasmsched serve supports (%s to %s are tested; README: \"Kubernetes versions\")",
			info.GitVersion, OldestKubernetes, OldestKubernetes, NewestKubernetes)
	case v.Major() > newest.Major() || v.Major() == newest.Major() && v.Minor() > newest.Minor():
		out.Warnings = append(out.Warnings, fmt.Sprintf("kube-apiserver %s is newer than %s, the newest release wasmsched is tested against; its APIs are all there",
			info.GitVersion, NewestKubernetes))
	}
	needs := serveNeeds
	if leaderElection {
		needs = append(append([]apiNeed(nil), serveNeeds...), leaderNeed)
	}
	return out, checkNeeds(ctx, dc, out.Version, needs)
}

// serverVersion reads major.minor from the git version ("v1.37.2",
// "v1.35.4-gke.100", "v1.36.3+k3s1") or, failing that, from the
// major and minor fields ("1", "35+"); nil when neither says.
func serverVersion(git, major, minor string) *utilversion.Version {
	if v, err := utilversion.ParseGeneric(git); err == nil {
		return v
	}
	v, err := utilversion.ParseGeneric(strings.TrimSuffix(major, "+") + "." + strings.TrimSuffix(minor, "+"))
	if err != nil {
		return nil
	}
	return v
}

// checkNeeds asks discovery for each group/version once and reports
// every need it does not serve, joined.
func checkNeeds(ctx context.Context, dc discovery.DiscoveryInterfaceWithContext, server string, needs []apiNeed) error {
	lists := map[string]*metav1.APIResourceList{}
	var missing []error
	for _, n := range needs {
		list, seen := lists[n.groupVersion]
		if !seen {
			var err error
			list, err = dc.ServerResourcesForGroupVersionWithContext(ctx, n.groupVersion)
			switch {
			case apierrors.IsNotFound(err):
				list = nil
			case err != nil:
				return fmt.Errorf("discover the API server's %s resources: %w", n.groupVersion, err)
			}
			lists[n.groupVersion] = list
		}
		if err := n.check(list, server); err != nil {
			missing = append(missing, err)
		}
	}
	return errors.Join(missing...)
}

// check says what is wrong with the need against the server's resources
// of its group/version (nil list: the group/version is not served).
func (n apiNeed) check(list *metav1.APIResourceList, server string) error {
	name := n.groupVersion + " " + n.resource
	if n.groupVersion == "v1" {
		name = "core/v1 " + n.resource
	}
	if list == nil {
		return fmt.Errorf("kube-apiserver %s does not serve %s: serve %s (GA since Kubernetes %s; wasmsched supports %s and later)",
			server, name, n.why, n.since, OldestKubernetes)
	}
	for _, r := range list.APIResources {
		if r.Name != n.resource {
			continue
		}
		if n.kind != "" && r.Version != "" {
			if got := strings.TrimPrefix(r.Group+"/"+r.Version, "/"); got != n.kind {
				return fmt.Errorf("kube-apiserver %s serves %s with %s bodies, not %s: serve %s (GA since Kubernetes %s; wasmsched supports %s and later)",
					server, name, got, n.kind, n.why, n.since, OldestKubernetes)
			}
		}
		return nil
	}
	return fmt.Errorf("kube-apiserver %s does not serve %s: serve %s (GA since Kubernetes %s; wasmsched supports %s and later)",
		server, name, n.why, n.since, OldestKubernetes)
}
