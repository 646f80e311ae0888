package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/host/config"
)

// servedAPIs is what discovery says on a kube-apiserver of the supported
// releases, cut to what serve looks at.
func servedAPIs() []*metav1.APIResourceList {
	core := &metav1.APIResourceList{GroupVersion: "v1"}
	for _, r := range []string{"pods", "pods/binding", "pods/status", "nodes", "nodes/status", "namespaces", "events", "services", "replicationcontrollers", "configmaps"} {
		core.APIResources = append(core.APIResources, metav1.APIResource{Name: r})
	}
	core.APIResources = append(core.APIResources, metav1.APIResource{Name: "pods/eviction", Group: "policy", Version: "v1", Kind: "Eviction"})
	return []*metav1.APIResourceList{core,
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "replicasets"}, {Name: "statefulsets"}, {Name: "deployments"}}},
		{GroupVersion: "policy/v1", APIResources: []metav1.APIResource{{Name: "poddisruptionbudgets"}, {Name: "poddisruptionbudgets/status"}}},
		{GroupVersion: "scheduling.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "priorityclasses"}}},
		{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "leases"}}},
	}
}

// fakeServer is a clientset whose discovery reports the version and the
// resource lists given.
func fakeServer(git, major, minor string, lists []*metav1.APIResourceList) *fake.Clientset {
	c := fake.NewClientset()
	d := c.Discovery().(*fakediscovery.FakeDiscovery)
	d.FakedServerVersion = &version.Info{GitVersion: git, Major: major, Minor: minor}
	d.Resources = lists
	return c
}

// without drops a resource (or, with resource "", a whole group/version)
// from the lists.
func without(lists []*metav1.APIResourceList, gv, resource string) []*metav1.APIResourceList {
	var out []*metav1.APIResourceList
	for _, l := range lists {
		if l.GroupVersion != gv {
			out = append(out, l)
			continue
		}
		if resource == "" {
			continue
		}
		cut := &metav1.APIResourceList{GroupVersion: gv}
		for _, r := range l.APIResources {
			if r.Name != resource {
				cut.APIResources = append(cut.APIResources, r)
			}
		}
		out = append(out, cut)
	}
	return out
}

func TestCheckAPIServerAcceptsTheSupportedReleases(t *testing.T) {
	for _, v := range []struct{ git, major, minor string }{
		{"v1.35.4", "1", "35"}, {"v1.36.3", "1", "36"}, {"v1.37.2", "1", "37"},
		{"v1.35.4-gke.1000", "1", "35+"}, {"v1.36.3+k3s1", "1", "36"}, {"v1.37.0-rc.1", "1", "37"},
	} {
		for _, leader := range []bool{false, true} {
			got, err := CheckAPIServer(context.Background(), fakeServer(v.git, v.major, v.minor, servedAPIs()).Discovery(), leader)
			if err != nil {
				t.Errorf("%s (leader election %v): %v", v.git, leader, err)
			}
			if got.Version != v.git || len(got.Warnings) != 0 {
				t.Errorf("%s: got %+v, want the version and no warnings", v.git, got)
			}
		}
	}
}

func TestCheckAPIServerRefusesOlderReleases(t *testing.T) {
	for _, v := range []struct{ git, major, minor string }{
		{"v1.34.2", "1", "34"}, {"v1.30.0-eks-abc", "1", "30+"}, {"garbled", "1", "33+"},
	} {
		_, err := CheckAPIServer(context.Background(), fakeServer(v.git, v.major, v.minor, servedAPIs()).Discovery(), true)
		if err == nil {
			t.Fatalf("%s: accepted", v.git)
		}
		for _, want := range []string{"kube-apiserver " + v.git + " is older than 1.35", "oldest release wasmsched serve supports", "Kubernetes versions"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", v.git, err, want)
			}
		}
	}
}

// A release newer than the newest tested, or a version that says no
// release, is a warning: the APIs decide.
func TestCheckAPIServerWarnsOnUntestedOrUnknownReleases(t *testing.T) {
	for _, v := range []struct{ git, major, minor, warn string }{
		{"v1.38.0", "1", "38", "newer than 1.37"},
		{"v2.0.0", "2", "0", "newer than 1.37"},
		{"custom-build", "", "", `cannot tell the API server's release from version "custom-build"`},
	} {
		got, err := CheckAPIServer(context.Background(), fakeServer(v.git, v.major, v.minor, servedAPIs()).Discovery(), false)
		if err != nil {
			t.Fatalf("%s: %v", v.git, err)
		}
		if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], v.warn) {
			t.Errorf("%s: warnings %q, want one saying %q", v.git, got.Warnings, v.warn)
		}
	}
}

// Each missing API is named with what serve does with it and the release
// that made it GA; several are reported together.
func TestCheckAPIServerNamesMissingAPIs(t *testing.T) {
	cases := []struct {
		name   string
		lists  []*metav1.APIResourceList
		leader bool
		want   []string
	}{
		{"no policy/v1", without(servedAPIs(), "policy/v1", ""), false,
			[]string{"does not serve policy/v1 poddisruptionbudgets", "GA since Kubernetes 1.21"}},
		{"no binding subresource", without(servedAPIs(), "v1", "pods/binding"), false,
			[]string{"does not serve core/v1 pods/binding", "binds pods to nodes"}},
		{"no Lease API with leader election", without(servedAPIs(), "coordination.k8s.io/v1", ""), true,
			[]string{"does not serve coordination.k8s.io/v1 leases", "leader election Lease", "GA since Kubernetes 1.14"}},
		{"two missing", without(without(servedAPIs(), "scheduling.k8s.io/v1", ""), "apps/v1", "replicasets"), false,
			[]string{"scheduling.k8s.io/v1 priorityclasses", "apps/v1 replicasets"}},
	}
	for _, c := range cases {
		_, err := CheckAPIServer(context.Background(), fakeServer("v1.37.2", "1", "37", c.lists).Discovery(), c.leader)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range append(c.want, "kube-apiserver v1.37.2", "wasmsched supports 1.35 and later") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
	// Without leader election the Lease API is not needed.
	if _, err := CheckAPIServer(context.Background(), fakeServer("v1.37.2", "1", "37", without(servedAPIs(), "coordination.k8s.io/v1", "")).Discovery(), false); err != nil {
		t.Errorf("no Lease API, no leader election: %v", err)
	}
}

// An eviction subresource that takes policy/v1beta1 bodies (servers
// before 1.22) is refused: serve posts policy/v1 Evictions.
func TestCheckAPIServerWantsPolicyV1Evictions(t *testing.T) {
	lists := without(servedAPIs(), "v1", "pods/eviction")
	lists[0].APIResources = append(lists[0].APIResources, metav1.APIResource{Name: "pods/eviction", Group: "policy", Version: "v1beta1", Kind: "Eviction"})
	_, err := CheckAPIServer(context.Background(), fakeServer("v1.37.2", "1", "37", lists).Discovery(), false)
	if err == nil || !strings.Contains(err.Error(), "serves core/v1 pods/eviction with policy/v1beta1 bodies, not policy/v1") {
		t.Fatalf("error = %v", err)
	}
}

// A discovery request that fails (not a 404) stops the check with the
// group/version named, rather than reading as a missing API.
func TestCheckAPIServerReportsDiscoveryFailures(t *testing.T) {
	c := fakeServer("v1.37.2", "1", "37", servedAPIs())
	c.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	_, err := CheckAPIServer(context.Background(), c.Discovery(), false)
	if err == nil || !strings.Contains(err.Error(), "discover the API server's v1 resources: connection refused") {
		t.Fatalf("error = %v", err)
	}
	v := fakeServer("v1.37.2", "1", "37", servedAPIs())
	v.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if _, err := CheckAPIServer(context.Background(), v.Discovery(), false); err == nil || !strings.Contains(err.Error(), "GET /version") {
		t.Fatalf("error = %v", err)
	}
}

// Serve with CheckAPIServer refuses an old server before loading a module.
func TestServeRefusesAnOldAPIServer(t *testing.T) {
	err := Serve(context.Background(), ServeOptions{Client: fakeServer("v1.33.1", "1", "33", servedAPIs()), Config: config.Default(),
		CacheDir: t.TempDir(), CheckAPIServer: true})
	if err == nil || !strings.Contains(err.Error(), "check the API server: kube-apiserver v1.33.1 is older than 1.35") {
		t.Fatalf("Serve = %v", err)
	}
}
