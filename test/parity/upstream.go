package parity

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	core "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // core/v1 defaulting and conversion in legacyscheme
	"k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"
)

// NodeScore is one feasible node's weighted total and its parts, as
// kube-scheduler's RunScorePlugins gives them.
type NodeScore struct {
	Node    string
	Total   int64
	Plugins map[string]int64
}

// Upstream is what kube-scheduler v1.37 does with a case's pending pod.
type Upstream struct {
	// Top are the nodes with the highest total score, sorted: the node
	// kube-scheduler picks is one of them at random. With one feasible
	// node (or a nominated node that passes the filters) it is that node.
	Top []string
	// Chosen is the node this run's SchedulePod picked.
	Chosen string
	// Scores are the feasible nodes' scores, by node name; empty when
	// scoring was skipped.
	Scores []NodeScore
	// Message is the FitError's text, PostFilter (preemption) included,
	// as the FailedScheduling event and PodScheduled condition carry it;
	// empty when the pod fits.
	Message string
	// Nominated is where preemption (PostFilter) made room, when it
	// found victims: the pod would go there once they are gone.
	Nominated string
}

// RunUpstream schedules c's pending pod with kube-scheduler's own
// Scheduler (scheduler.New: the v1 default profile, feature gates at
// their 1.37 defaults) over a fake clientset holding c's objects as the
// API server would store them: defaulted, priority admitted, finished
// pods left out as the scheduler's pod informer's field selector does.
func RunUpstream(ctx context.Context, c *Case) (*Upstream, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	classes := map[string]*schedulingv1.PriorityClass{}
	for _, pc := range c.PriorityClasses {
		classes[pc.Name] = pc
	}
	var objs []runtime.Object
	for _, o := range c.objects() {
		o = o.DeepCopyObject()
		if p, ok := o.(*corev1.Pod); ok {
			if p == c.Pending {
				continue
			}
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
		}
		if err := admit(o, classes); err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	pending := c.Pending.DeepCopy()
	if err := admit(pending, classes); err != nil {
		return nil, err
	}

	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorders := func(string) events.EventRecorderLogger { return &events.FakeRecorder{} }
	snapshot := internalcache.NewEmptySnapshot()
	sched, err := scheduler.New(ctx, client, factory, nil, recorders,
		scheduler.WithPercentageOfNodesToScore(ptr.To[int32](100)), scheduler.WithNodeInfoSnapshot(snapshot))
	if err != nil {
		return nil, fmt.Errorf("upstream scheduler: %w", err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }() // the informers stop with ctx
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("upstream informer for %v did not sync", typ)
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, fmt.Errorf("upstream event handlers: %w", err)
	}
	prof := sched.Profiles[corev1.DefaultSchedulerName]
	if prof == nil {
		return nil, errors.New("upstream has no default-scheduler profile")
	}

	// As schedulingCycle does before SchedulePod: the cycle's snapshot
	// of the cache.
	if err := sched.Cache.UpdateSnapshot(klog.FromContext(ctx), snapshot); err != nil {
		return nil, fmt.Errorf("upstream snapshot: %w", err)
	}
	out := &Upstream{}
	state := framework.NewCycleState()
	pi, err := framework.NewPodInfo(pending)
	if err != nil {
		return nil, fmt.Errorf("upstream pod info: %w", err)
	}
	res, err := sched.SchedulePod(ctx, prof, state, &framework.QueuedPodInfo{PodInfo: pi})
	if err != nil {
		var fit *framework.FitError
		if !errors.As(err, &fit) {
			return nil, fmt.Errorf("upstream SchedulePod: %w", err)
		}
		// As schedulingCycle does: PostFilter (DefaultPreemption) adds
		// its message to the FitError.
		if prof.HasPostFilterPlugins() {
			res, st := prof.RunPostFilterPlugins(ctx, state, pending, fit.Diagnosis.NodeToStatus)
			fit.Diagnosis.PostFilterMsg = st.Message()
			if st.IsSuccess() && res != nil && res.NominatingInfo != nil {
				out.Nominated = res.NominatingInfo.NominatedNodeName
			}
		}
		out.Message = fit.Error()
		return out, nil
	}
	out.Chosen = res.SuggestedHost
	if res.FeasibleNodes == 1 {
		out.Top = []string{res.SuggestedHost}
		return out, nil
	}
	scores, err := scoreAll(ctx, prof, pending)
	if err != nil {
		return nil, err
	}
	if len(scores) != res.FeasibleNodes {
		return nil, fmt.Errorf("harness: %d feasible nodes scored, SchedulePod found %d", len(scores), res.FeasibleNodes)
	}
	out.Scores = scores
	var best int64 = -1
	for _, s := range scores {
		switch {
		case s.Total > best:
			best, out.Top = s.Total, []string{s.Node}
		case s.Total == best:
			out.Top = append(out.Top, s.Node)
		}
	}
	sort.Strings(out.Top)
	found := false
	for _, n := range out.Top {
		found = found || n == res.SuggestedHost
	}
	if !found {
		return nil, fmt.Errorf("harness: SchedulePod chose %s, not among the top-scoring %v", res.SuggestedHost, out.Top)
	}
	return out, nil
}

// scoreAll runs a scheduling cycle's PreFilter, Filter (with nominated
// pods), PreScore and Score on the snapshot SchedulePod just took, as
// schedulePod does, and returns every feasible node's scores: SchedulePod
// itself returns only the node it drew among the best.
func scoreAll(ctx context.Context, prof framework.Framework, pod *corev1.Pod) ([]NodeScore, error) {
	state := framework.NewCycleState()
	pre, st, _ := prof.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		return nil, fmt.Errorf("harness: PreFilter failed on the second run: %v", st.AsError())
	}
	all, err := prof.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fmt.Errorf("upstream snapshot: %w", err)
	}
	var feasible []fwk.NodeInfo
	for _, ni := range all {
		if !pre.AllNodes() && !pre.NodeNames.Has(ni.Node().Name) {
			continue
		}
		st := prof.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
		if st.Code() == fwk.Error {
			return nil, fmt.Errorf("upstream Filter on %s: %w", ni.Node().Name, st.AsError())
		}
		if st.IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if st := prof.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return nil, fmt.Errorf("upstream PreScore: %w", st.AsError())
	}
	list, st := prof.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return nil, fmt.Errorf("upstream Score: %w", st.AsError())
	}
	out := make([]NodeScore, 0, len(list))
	for _, ns := range list {
		s := NodeScore{Node: ns.Name, Total: ns.TotalScore, Plugins: map[string]int64{}}
		for _, ps := range ns.Scores {
			s.Plugins[ps.Name] = ps.Score
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// admit does to o what kube-apiserver does before storing it: core/v1
// defaulting, a pod's namespace, its pod-level resource defaults, its priority and preemption policy from
// its PriorityClass (none: 0), a PriorityClass's default policy, and
// validation of pods and nodes (a refusal means the generator made an
// object no cluster would hold).
func admit(o runtime.Object, classes map[string]*schedulingv1.PriorityClass) error {
	legacyscheme.Scheme.Default(o)
	switch t := o.(type) {
	case *schedulingv1.PriorityClass:
		if t.PreemptionPolicy == nil {
			t.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
		}
	case *corev1.Pod:
		if t.Namespace == "" {
			t.Namespace = corev1.NamespaceDefault
		}
		if t.Spec.Priority == nil {
			t.Spec.Priority = ptr.To[int32](0)
			if pc := classes[t.Spec.PriorityClassName]; pc != nil {
				t.Spec.Priority = ptr.To(pc.Value)
				policy := corev1.PreemptLowerPriority
				if pc.PreemptionPolicy != nil {
					policy = *pc.PreemptionPolicy
				}
				t.Spec.PreemptionPolicy = &policy
			} else if t.Spec.PriorityClassName != "" {
				return fmt.Errorf("generator: pod %s names no PriorityClass %q", t.Name, t.Spec.PriorityClassName)
			}
		}
		var in core.Pod
		if err := legacyscheme.Scheme.Convert(t, &in, nil); err != nil {
			return fmt.Errorf("convert pod %s: %w", t.Name, err)
		}
		// The pod strategy's PrepareForCreate defaults pod-level
		// resources since 1.37 (PodLevelResourcesFixDefaulting), no
		// longer core/v1 defaulting: the stored pod carries them.
		podutil.DefaultPodLevelResources(&in)
		if err := legacyscheme.Scheme.Convert(&in, t, nil); err != nil {
			return fmt.Errorf("convert pod %s back: %w", t.Name, err)
		}
		opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&in.Spec, nil, &in.ObjectMeta, nil)
		if errs := validation.ValidatePodCreate(&in, opts); len(errs) > 0 {
			return fmt.Errorf("generator: pod %s is invalid: %w", t.Name, errs.ToAggregate())
		}
	case *corev1.Node:
		var in core.Node
		if err := legacyscheme.Scheme.Convert(t, &in, nil); err != nil {
			return fmt.Errorf("convert node %s: %w", t.Name, err)
		}
		if errs := validation.ValidateNode(&in); len(errs) > 0 {
			return fmt.Errorf("generator: node %s is invalid: %w", t.Name, errs.ToAggregate())
		}
	}
	return nil
}
