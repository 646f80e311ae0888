package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/internal/convert"
	"github.com/wasmsched/wasmsched/host/internal/usage"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// EvictionComponent is the source component of the Events the eviction
// killer records (EvictCreated, EvictSucceeded, ...): the pods it kills
// may belong to any scheduler, so the Events do not name a profile.
const EvictionComponent = "wasmsched-eviction"

// EvictionAPI makes the eviction killer's calls against the Kubernetes
// API.
//
// RBAC: create pods/eviction, delete pods (the delete killer and forced
// deletions), get pods (PodUID reads past the informer cache), create
// events.
type EvictionAPI struct {
	Client kubernetes.Interface
	// Recorder records the killer's Events; nil records none.
	Recorder *Recorder
}

var _ eviction.API = EvictionAPI{}

// EvictPod implements podremoval.Remover through PodRemover, settling
// a conflict (settle).
func (a EvictionAPI) EvictPod(ctx context.Context, pod *abi.Pod, grace *int64) error {
	return a.settle(ctx, pod, PodRemover{Client: a.Client}.EvictPod(ctx, pod, grace))
}

// DeletePod implements podremoval.Remover through PodRemover, settling
// a conflict (settle).
func (a EvictionAPI) DeletePod(ctx context.Context, pod *abi.Pod, grace *int64) error {
	return a.settle(ctx, pod, PodRemover{Client: a.Client}.DeletePod(ctx, pod, grace))
}

// settle reads the pod again after a conflict (409): when the UID
// precondition failed, the name belongs to another pod now, or to none,
// so ours is gone (podremoval.ErrNotFound). The Eviction API also answers
// 409 when its budget update keeps conflicting; then a live read finds
// our pod still there, the error stands and the killer retries.
func (a EvictionAPI) settle(ctx context.Context, pod *abi.Pod, err error) error {
	if !errors.Is(err, podremoval.ErrConflict) {
		return err
	}
	uid, getErr := a.PodUID(ctx, pod.Namespace, pod.Name)
	if errors.Is(getErr, podremoval.ErrNotFound) || getErr == nil && uid != pod.UID {
		return fmt.Errorf("another pod has its name now: %w (%w)", podremoval.ErrNotFound, err)
	}
	return err
}

// PodUID implements eviction.API with a GET to the API server: the
// informer's cache may still hold a pod that is gone.
func (a EvictionAPI) PodUID(ctx context.Context, namespace, name string) (string, error) {
	p, err := a.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("get pod %s/%s: %w (%v)", namespace, name, podremoval.ErrNotFound, err)
	case err != nil:
		return "", fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return string(p.UID), nil
}

// Event implements eviction.API through the scheduler's Event
// broadcaster, under EvictionComponent.
func (a EvictionAPI) Event(pod *abi.Pod, warning bool, reason, message string) {
	if a.Recorder == nil {
		return
	}
	a.Recorder.event(EvictionComponent, a.Recorder.podRef(pod), nil, warning, reason, ActionEvicting, message)
}

// NodeUpdater is told of a node changed by the coordinator before the
// informer's echo arrives (scheduler.Scheduler's OnNodeUpdate).
type NodeUpdater interface {
	OnNodeUpdate(old, n *abi.Node)
}

// SnapshotSource is the scheduler's cache as the coordinator reads it.
type SnapshotSource interface {
	UpdateSnapshot(dst *snapshot.Snapshot)
}

// EvictionCluster is the coordinator's view of a real cluster: the
// scheduler's cache to read, node taints to write.
//
// RBAC: get and update nodes (taints are in the node's spec).
type EvictionCluster struct {
	Client kubernetes.Interface
	Cache  SnapshotSource
	// Nodes, if set, receives every node whose taints were set, at once,
	// so that the scheduler's profiles see a NoSchedule taint before the
	// informer echoes it.
	Nodes NodeUpdater
	// Now stamps a new NoExecute taint's timeAdded (nil: time.Now).
	Now func() time.Time
}

var _ eviction.Cluster = EvictionCluster{}

// UpdateSnapshot implements eviction.Cluster from the scheduler's cache.
func (c EvictionCluster) UpdateSnapshot(dst *snapshot.Snapshot) { c.Cache.UpdateSnapshot(dst) }

// SetEvictionTaints implements eviction.Cluster: it reads the node,
// replaces the taints whose key starts with eviction.TaintPrefix by
// taints (keeping every other taint, and the timeAdded of taints that
// stay), and updates the node, reading it again on a conflict. The node
// as written, or as read when nothing had to change, then goes to Nodes.
func (c EvictionCluster) SetEvictionTaints(ctx context.Context, node string, taints []abi.Taint) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	var before, after *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		before, after = n, n
		swapped, changed := swapEvictionTaints(n.Spec.Taints, taints, metav1.NewTime(now()))
		if !changed {
			return nil
		}
		upd := n.DeepCopy()
		upd.Spec.Taints = swapped
		after, err = c.Client.CoreV1().Nodes().Update(ctx, upd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("set eviction taints on node %s: %w", node, err)
	}
	if c.Nodes != nil {
		old, err1 := convert.Node(before)
		n, err2 := convert.Node(after)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("node %s tainted, but the scheduler cannot represent it: %w", node, err)
		}
		c.Nodes.OnNodeUpdate(old, n)
	}
	return nil
}

// swapEvictionTaints returns have with its taints under
// eviction.TaintPrefix replaced by want, and whether that changes
// anything. Other taints keep their place; the wanted ones follow them
// in want's order. A wanted taint already there keeps its timeAdded; a
// new NoExecute one gets now (as kubectl taint does).
func swapEvictionTaints(have []corev1.Taint, want []abi.Taint, now metav1.Time) ([]corev1.Taint, bool) {
	out := make([]corev1.Taint, 0, len(have)+len(want))
	var managed []corev1.Taint
	for _, t := range have {
		if eviction.Managed(t.Key) {
			managed = append(managed, t)
		} else {
			out = append(out, t)
		}
	}
	changed := len(managed) != len(want)
	for i, w := range want {
		t := corev1.Taint{Key: w.Key, Value: w.Value, Effect: corev1.TaintEffect(w.Effect.String())}
		found := false
		for _, m := range managed {
			if m.Key == t.Key && m.Effect == t.Effect {
				t.TimeAdded, found = m.TimeAdded, m.Value == t.Value
				break
			}
		}
		if !found {
			changed = true
		}
		if !found && t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded == nil {
			t.TimeAdded = &now
		}
		if !changed && (managed[i].Key != t.Key || managed[i].Effect != t.Effect) {
			changed = true // same taints, another order: write the sorted one
		}
		out = append(out, t)
	}
	return out, changed
}

// usageSource adapts a usage.Source to the coordinator's UsageSource.
type usageSource struct{ src usage.Source }

// EvictionUsage makes a usage.Source (usage.MetricsAPI) the coordinator's
// usage: a round without data gets a nil Usage.
func EvictionUsage(src usage.Source) eviction.UsageSource { return usageSource{src} }

// SetTTL implements eviction.CachedUsageSource when the source caches
// (usage.MetricsAPI).
func (u usageSource) SetTTL(ttl time.Duration) {
	if c, ok := u.src.(interface{ SetTTL(time.Duration) }); ok {
		c.SetTTL(ttl)
	}
}

func (u usageSource) Usage(ctx context.Context) (eviction.Usage, error) {
	s, err := u.src.Usage(ctx)
	if err != nil || s == nil {
		return nil, err // never a typed nil in the interface
	}
	return s, nil
}

// evictionParts are the eviction coordinator of one Serve and its
// killer: made at start (so a bad eviction section stops serve there, and
// a reload can hand the coordinator new policies), run only while this
// replica leads.
type evictionParts struct {
	coord  *eviction.Coordinator
	killer *eviction.Killer
	log    hclog.Logger
}

// newEvictionParts builds the configuration's eviction policies (on a
// registry of their own that shares reg's compiled modules, so reloads
// may close reg) and the coordinator that runs them. It is made even
// without policies: a reload may add some. Errors name the configuration
// field at fault.
func newEvictionParts(ctx context.Context, o ServeOptions, modOpts modules.Options, reg *modules.Registry,
	api eviction.API, cluster eviction.Cluster, log hclog.Logger) (*evictionParts, error) {
	settings := o.Config.Eviction.Defaulted()
	modOpts.Previous = reg
	set, err := eviction.LoadPolicies(ctx, o.Config, modOpts)
	if err != nil {
		return nil, err
	}
	log = log.Named("eviction")
	var src eviction.UsageSource
	if o.RESTConfig == nil {
		log.Info("no REST configuration for metrics.k8s.io: eviction policies get no usage data")
	} else {
		// Half the sync period: the policies of one round share a
		// snapshot, the next round gets a fresh one.
		u, err := usage.NewMetricsAPIForConfig(o.RESTConfig, usage.MetricsAPIOptions{TTL: settings.SyncPeriod / 2, Log: log.Named("usage")})
		if err != nil {
			set.Close(ctx)
			return nil, fmt.Errorf("eviction: %w", err)
		}
		src = EvictionUsage(u)
	}
	e := &evictionParts{log: log}
	kopts := eviction.KillerOptionsFrom(settings)
	kopts.Log, kopts.Metrics = log.Named("killer"), o.Metrics.Eviction()
	kopts.OnBlocked = func(uid string, until time.Time) { e.coord.Blocked(uid, until) }
	e.killer = eviction.NewKiller(api, kopts)
	e.coord = eviction.New(eviction.Options{Settings: eviction.SettingsFrom(settings), Cluster: cluster, Killer: e.killer,
		Usage: src, Metrics: o.Metrics.Eviction(), Log: log, Decisions: o.Decisions}, set)
	names := make([]string, 0, len(set.Policies()))
	for _, p := range set.Policies() {
		names = append(names, p.Name())
	}
	if len(names) > 0 {
		log.Info("eviction policies loaded; they run while this replica leads", "policies", strings.Join(names, ","),
			"sync_period", settings.SyncPeriod, "burst", settings.Burst, "killer", settings.Killer)
	}
	return e, nil
}

// run runs the killer and the coordinator until ctx ends, and returns
// once both have stopped.
func (e *evictionParts) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { e.killer.Run(ctx) })
	wg.Go(func() { e.coord.Run(ctx) })
	wg.Wait()
}

// close releases the policies and their registry.
func (e *evictionParts) close(ctx context.Context) { e.coord.Close(ctx) }
