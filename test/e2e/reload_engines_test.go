package e2e

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// reloadEnginesConfig has an eviction section and one vpod scheduler
// whose scheduling policy is in the file sched.json, Knative's
// config-scheduler as a ConfigMap key; podCapacity and syncPeriod are
// filled in, and more vpod schedulers may follow (EXTRA).
const reloadEnginesConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles: [{schedulerName: wasmsched}]
eviction:
  syncPeriod: SYNC
  policies: [{plugin: ResourceOvercommit, dryRun: true}]
vpod:
  schedulers:
  - name: zonal
    statefulSet: {namespace: adapters, name: zonal}
    podCapacity: CAPACITY
    strategy: Policy
    refreshPeriod: 1s
    schedulerPolicyFile: sched.json
EXTRA`

func reloadEnginesYAML(sync, capacity string, extra ...string) []byte {
	return []byte(strings.NewReplacer("SYNC", sync, "CAPACITY", capacity, "EXTRA", strings.Join(extra, "")).Replace(reloadEnginesConfig))
}

// Vpod schedulers a reload adds: second fills StatefulSet second (four
// vreplicas a pod); kafka reads a duck-typed resource whose CRD is not
// installed in the reload test.
const (
	secondScheduler = `  - {name: second, statefulSet: {namespace: adapters, name: second}, podCapacity: 4, strategy: MAXFILLUP, refreshPeriod: 1s}
`
	unservedScheduler = `  - name: kafka
    statefulSet: {namespace: adapters, name: kafka}
    podCapacity: 10
    strategy: MAXFILLUP
    sources:
    - {group: sources.example.dev, version: v1, resource: kafkasources, vreplicasPath: spec.consumers, placementsPath: status.placements}
`
)

// The policies as Knative's ConfigMap holds them: lowest ordinal first,
// then spread over zones.
const (
	lowestOrdinalPolicy = `{"predicates": [{"name": "PodFitsResources"}], "priorities": [{"name": "LowestOrdinalPriority", "weight": 1}]}`
	zoneSpreadPolicy    = `{"predicates": [{"name": "PodFitsResources"}], "priorities": [{"name": "AvailabilityZonePriority", "weight": 10, "args": "{\"MaxSkew\": 1}"}, {"name": "LowestOrdinalPriority", "weight": 2}]}`
)

// TestReloadVPodPolicyAndEvictionSettings runs serve with its
// configuration and a vpod policy file in a directory laid out like a
// mounted ConfigMap. A changed policy file alone is reloaded: vpods
// created after it are placed by the new policy. A changed eviction
// syncPeriod applies without a restart: rounds start that the hour-long
// period kept from running. A changed podCapacity and a second vpod
// scheduler on another StatefulSet apply live: the replaced scheduler
// places by the new capacity, the new one places its vpods. A scheduler
// whose source is not served is refused with the field named, and the
// running schedulers keep placing vpods.
func TestReloadVPodPolicyAndEvictionSettings(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	installCRD(t, ctx, admin, dyn, "../../deploy/vpod-crd.yaml", vpodsGVR)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: adapterNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, name := range vpodNodes {
		n := node(name, "4")
		n.Labels["topology.kubernetes.io/zone"] = vpodZones[i]
		createNode(t, ctx, admin, n)
	}
	createStatefulSet(t, ctx, admin, "zonal", 3)
	createStatefulSet(t, ctx, admin, "second", 2)
	stsCtx, stopSTS := context.WithCancel(ctx)
	defer stopSTS()
	go statefulSetController(stsCtx, admin, map[string]int32{"zonal": 3, "second": 2})

	cm := &mountedConfigMap{t: t, dir: t.TempDir()}
	cm.update(map[string][]byte{"config.yaml": reloadEnginesYAML("1h", "10"), "sched.json": []byte(lowestOrdinalPolicy)})
	cfgPath := filepath.Join(cm.dir, "config.yaml")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	promReg := prometheus.NewRegistry()
	met, err := metrics.New(promReg)
	if err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs.String())
		}
	})
	startServe(t, ctx, kube.ServeOptions{Client: admin, RESTConfig: rc, Config: cfg, ConfigPath: cfgPath, Watch: true, Metrics: met,
		Log: hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})})
	reloads := func(result string) float64 {
		return testmetrics.Value(t, promReg, "wasmsched_config_reloads_total", testmetrics.Labels{"result": result})
	}
	rounds := func() float64 { return testmetrics.Value(t, promReg, "wasmsched_eviction_rounds_total", nil) }
	v := &vpodClient{t: t, ctx: ctx, dyn: dyn, admin: admin}

	v.create(vpodsGVR, vpodObj("before", 3, "adapters/zonal"))
	v.waitPlacements(vpodsGVR, "before", "placed on the lowest ordinal", func(ps []place) bool {
		return reflect.DeepEqual(ps, []place{{"zonal-0", 3}})
	})

	// The policy file changes, the configuration file does not.
	cm.update(map[string][]byte{"config.yaml": reloadEnginesYAML("1h", "10"), "sched.json": []byte(zoneSpreadPolicy)})
	v.waitUntil("the reload of the policy file", func() bool { return reloads(metrics.ReloadSuccess) >= 2 })
	spread := []place{{"zonal-0", 1}, {"zonal-1", 1}, {"zonal-2", 1}}
	v.create(vpodsGVR, vpodObj("after", 3, "adapters/zonal"))
	v.waitPlacements(vpodsGVR, "after", "placed one per zone", func(ps []place) bool { return reflect.DeepEqual(ps, spread) })

	// Eviction's sync period: an hour, so no round has run yet; 1s after
	// the reload.
	if n := rounds(); n != 0 {
		t.Fatalf("%v eviction rounds ran with a sync period of an hour", n)
	}
	cm.update(map[string][]byte{"config.yaml": reloadEnginesYAML("1s", "10"), "sched.json": []byte(zoneSpreadPolicy)})
	v.waitUntil("the reload of the eviction settings", func() bool { return reloads(metrics.ReloadSuccess) >= 3 })
	v.waitUntil("eviction rounds on the new sync period", func() bool { return rounds() >= 2 })

	// podCapacity 10 → 20 with the lowest-ordinal policy, and a second
	// scheduler: zonal-0 (4 vreplicas so far) takes all 15 of bigger,
	// where at 10 it would have taken 6 and zonal-1 the rest.
	cm.update(map[string][]byte{"config.yaml": reloadEnginesYAML("1s", "20", secondScheduler), "sched.json": []byte(lowestOrdinalPolicy)})
	v.waitUntil("the capacity change and the new scheduler applied", func() bool { return reloads(metrics.ReloadSuccess) >= 4 })
	v.create(vpodsGVR, vpodObj("bigger", 15, "adapters/zonal"))
	v.waitPlacements(vpodsGVR, "bigger", "placed by the new capacity", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"zonal-0", 15}}) })
	v.create(vpodsGVR, vpodObj("second", 6, "adapters/second"))
	v.waitPlacements(vpodsGVR, "second", "placed by the new scheduler", func(ps []place) bool {
		return reflect.DeepEqual(ps, []place{{"second-0", 4}, {"second-1", 2}})
	})
	for _, line := range []string{"vpod scheduler replaced", "scheduler=zonal", "vpod scheduler started", "scheduler=second"} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("serve's log lacks %q", line)
		}
	}

	// A scheduler whose source is not served: refused, and both running
	// schedulers keep placing vpods.
	cm.update(map[string][]byte{"config.yaml": reloadEnginesYAML("1s", "20", secondScheduler, unservedScheduler), "sched.json": []byte(lowestOrdinalPolicy)})
	v.waitUntil("the unserved source refused", func() bool { return reloads(metrics.ReloadRefused) >= 1 })
	if !strings.Contains(logs.String(), "vpod.schedulers[2].sources[0]") {
		t.Errorf("the refusal does not name vpod.schedulers[2].sources[0]:\n%s", logs.String())
	}
	v.create(vpodsGVR, vpodObj("refused", 1, "adapters/zonal"))
	v.waitPlacements(vpodsGVR, "refused", "placed by the running zonal scheduler", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"zonal-0", 1}}) })
	v.create(vpodsGVR, vpodObj("second-more", 1, "adapters/second"))
	v.waitPlacements(vpodsGVR, "second-more", "placed by the running second scheduler", func(ps []place) bool {
		return reflect.DeepEqual(ps, []place{{"second-1", 1}})
	})
	if n := reloads(metrics.ReloadSuccess); n != 4 {
		t.Errorf("reloads_total{success} = %v, want 4", n)
	}
}
