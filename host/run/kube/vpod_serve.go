package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// vpodSpec is one scheduler as vpodParts builds it.
type vpodSpec struct {
	Settings vpod.Settings
	Sources  []VPodSource
	// Config is the scheduler as configured (defaults applied), which a
	// reload compares the next configuration's with.
	Config config.VPodSettings
}

// newVPodParts builds the configuration's vpod schedulers for Serve: a
// dynamic client from o.RESTConfig, policies on a module registry of
// their own sharing reg's compiled modules (as the eviction policies'),
// then newVPodPartsWith. Without a vpod section it returns empty parts.
func newVPodParts(ctx context.Context, o ServeOptions, modOpts modules.Options, reg *modules.Registry, rec *Recorder, log hclog.Logger) (*vpodParts, error) {
	log = log.Named("vpod")
	specs, err := vpodSpecsFrom(o.Config)
	if err != nil {
		return nil, err
	}
	var dyn dynamic.Interface
	switch {
	case o.RESTConfig != nil:
		if dyn, err = dynamic.NewForConfig(o.RESTConfig); err != nil {
			return nil, fmt.Errorf("vpod: dynamic client: %w", err)
		}
	case len(specs) > 0:
		return nil, errNoDynamic
	}
	var own *modules.Registry
	if len(specs) > 0 {
		modOpts.Previous = reg
		if own, err = modules.Load(ctx, o.Config, modOpts); err != nil {
			return nil, fmt.Errorf("vpod: %w", err)
		}
	}
	var er events.EventRecorder
	if rec != nil {
		er = rec.recorderFor(VPodComponent)
	}
	return newVPodPartsWith(ctx, vpodPartsOptions{Client: o.Client, Dynamic: dyn, Specs: specs, Registry: own, Log: log,
		Events: er, Metrics: o.Metrics.VPod(), Decisions: o.Decisions})
}

// errNoDynamic: vpod schedulers configured without a dynamic client.
var errNoDynamic = errors.New("vpod: serve needs a REST configuration (ServeOptions.RESTConfig) for the dynamic client that reads vpods")

// vpodSpecsFrom converts the configuration's vpod section (defaults
// applied) to engine settings and parsed sources. Errors name the field.
func vpodSpecsFrom(cfg *config.Configuration) ([]vpodSpec, error) {
	settings, err := cfg.VPod.Defaulted()
	if err != nil {
		return nil, fmt.Errorf("vpod: %w", err)
	}
	out := make([]vpodSpec, 0, len(settings))
	for i, s := range settings {
		spec := vpodSpec{Settings: vpod.SettingsFrom(s), Config: s}
		for j, src := range s.Sources {
			if src.Kind == config.VPodSourceKind {
				spec.Sources = append(spec.Sources, CRDVPodSource())
				continue
			}
			gvr := schema.GroupVersionResource{Group: src.Group, Version: src.Version, Resource: src.Resource}
			vs, err := NewDuckVPodSource(gvr, src.VReplicasPath, src.PlacementsPath)
			if err != nil {
				return nil, cfg.ErrorAt(fmt.Sprintf("%s.sources[%d]", config.VPodSchedulerField(i), j), "%v", err)
			}
			spec.Sources = append(spec.Sources, vs)
		}
		out = append(out, spec)
	}
	return out, nil
}

// vpodPartsOptions are newVPodPartsWith's inputs.
type vpodPartsOptions struct {
	Client kubernetes.Interface
	// Dynamic reads the sources; nil only when no scheduler may ever be
	// configured (a reload adding one is refused).
	Dynamic dynamic.Interface
	// Specs are the schedulers at start, in configuration order; a
	// reload brings others (vpodParts.Stage).
	Specs []vpodSpec
	// Registry serves the policies of Specs; the parts own it (closed
	// with them, when a reload replaces it, or at once when
	// newVPodPartsWith fails).
	Registry *modules.Registry
	Log      hclog.Logger
	// Events records Events on vpods (nil: none); Metrics counts the
	// engines' policy module failures (nil: none).
	Events  events.EventRecorder
	Metrics *metrics.VPod
	// Decisions receives the engines' Schedule and autoscaler records
	// (nil: none).
	Decisions decision.Sink
	// newEngine replaces vpod.New and vpod.NewPolicies (tests).
	newEngine func(s vpod.Settings, c vpod.Cluster, ev vpod.Evictor) (vpodEngine, error)
	// wrapQueue, when set, wraps each controller's queue before any
	// informer feeds it (tests: to see when an item was handled).
	wrapQueue func(workqueue.TypedRateLimitingInterface[vpodItem]) workqueue.TypedRateLimitingInterface[vpodItem]
	// adapterEvent, when set, is called after the adapter pod,
	// StatefulSet and node handlers have handled an event, whether or
	// not it queued anything (tests: to know that an event which must
	// not requeue a vpod has been seen).
	adapterEvent func()
	// SyncTimeout bounds how long a reload waits for a new or changed
	// scheduler's informers to sync (0: DefaultVPodSyncTimeout). At
	// start serve waits as long as its context allows.
	SyncTimeout time.Duration
}

// DefaultVPodSyncTimeout is how long a reload waits for the informers
// of a vpod scheduler it adds or changes to sync before refusing it.
const DefaultVPodSyncTimeout = time.Minute

// checkVPodSpecs refuses what the configuration checks cannot see: two
// schedulers of one StatefulSet, and a duck-typed resource that two
// schedulers (which would fight over its placements) or one scheduler
// twice take as a source. specs are the whole set, in configuration
// order (errors name vpod.schedulers[i]).
func checkVPodSpecs(specs []vpodSpec) error {
	sts := map[string]string{}
	duck := map[schema.GroupVersionResource]string{}
	for i, spec := range specs {
		s := spec.Settings
		f := config.VPodSchedulerField(i)
		k := s.Namespace + "/" + s.StatefulSet
		if other, ok := sts[k]; ok {
			return fmt.Errorf("%s.statefulSet: vpod schedulers %s and %s both name statefulset %s", f, other, s.Name, k)
		}
		sts[k] = s.Name
		crd := false
		for j, src := range spec.Sources {
			if src.CRD {
				if crd {
					return fmt.Errorf("%s.sources[%d] (vpod scheduler %s): the VPod source is listed twice", f, j, s.Name)
				}
				crd = true
				continue
			}
			if other, ok := duck[src.Resource]; ok {
				return fmt.Errorf("%s.sources[%d]: resource %s is a source of schedulers %s and %s; a resource's objects belong to one scheduler",
					f, j, resourceName(src.Resource), other, s.Name)
			}
			duck[src.Resource] = s.Name
		}
	}
	return nil
}

// checkServed asks discovery whether each source resource of specs (the
// set in configuration order) is served, so a missing CRD is a clear
// error rather than an informer that never syncs.
func checkServed(client kubernetes.Interface, specs []vpodSpec) error {
	for i, spec := range specs {
		if err := checkSpecServed(client, i, spec); err != nil {
			return err
		}
	}
	return nil
}

// checkSpecServed is checkServed for scheduler i.
func checkSpecServed(client kubernetes.Interface, i int, spec vpodSpec) error {
	for j, src := range spec.Sources {
		gvr := src.Resource
		list, err := client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		served := false
		if err == nil {
			for _, r := range list.APIResources {
				served = served || r.Name == gvr.Resource
			}
		}
		if served {
			continue
		}
		hint := "install its CustomResourceDefinition"
		if src.CRD {
			hint = "install deploy/vpod-crd.yaml"
		}
		why := "not served"
		if err != nil {
			why = err.Error()
		}
		return fmt.Errorf("%s.sources[%d] (vpod scheduler %s): source %s: the API server does not serve it (%s); %s",
			config.VPodSchedulerField(i), j, spec.Settings.Name, resourceName(gvr), why, hint)
	}
	return nil
}

func vpodSourceNames(srcs []VPodSource) string {
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.String()
	}
	return strings.Join(names, "; ")
}
