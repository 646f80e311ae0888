package parity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	policylisters "k8s.io/client-go/listers/policy/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	testingclock "k8s.io/utils/clock/testing"
)

// defaultConfig is the configuration a case without its own gets: the
// v1 defaults, every node scored (clusters are far below 100 nodes, where
// kube-scheduler evaluates every node anyway).
const defaultConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
`

// PodOutcome is what one scheduling cycle did with one pending pod.
type PodOutcome struct {
	// Pod is namespace/name.
	Pod string
	// Top, Chosen, Scores and Message mean what they mean in Upstream;
	// on the wasmsched side only Chosen (the node) and Message are set.
	Top     []string
	Chosen  string
	Scores  []NodeScore
	Message string
	// Nominated is where preemption made room, when it found victims.
	Nominated string
	// Victims are the pods (namespace/name, sorted) preemption removed
	// on Nominated in this run.
	Victims []string
	// Choices are every (node, victims) preemption could have picked:
	// the candidates pickOneNodeForPreemption's criteria leave tied,
	// among which it takes whichever its map iteration gives first.
	// Upstream side only.
	Choices []VictimChoice
}

// VictimChoice is one preemption candidate: a node and the pods
// (namespace/name, sorted) removed there.
type VictimChoice struct {
	Node          string
	Victims       []string
	PDBViolations int64
	pods          []*corev1.Pod
}

func (v VictimChoice) String() string {
	return fmt.Sprintf("%s:%v", v.Node, v.Victims)
}

// decodeConfig reads a KubeSchedulerConfiguration as kube-scheduler
// does: its own scheme's decoder (v1 defaults applied) and validation.
func decodeConfig(data []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("upstream decodes the configuration: %w", err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("upstream decodes the configuration as %T", obj)
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("generator: upstream refuses the configuration: %w", err)
	}
	return cfg, nil
}

// RunUpstreamCycles gives c's pending pods to kube-scheduler's own
// Scheduler one by one, as its pod informer would (each created in the
// API after the last is queued, so activeQ orders them by priority and
// then arrival, as PrioritySort does), and runs ScheduleOne while activeQ
// holds a pod: the real queue (gated pods stay out), the real scheduling
// cycle with the assumed pods of earlier cycles, PostFilter. Each pod is
// tried once (the clock is fake and never reaches a backoff's end),
// except that a pod that preempted is retried once its victims are gone.
// It returns the outcome of each cycle in the order they ran.
//
// follow, if given, is wasmsched's outcomes of the same case: where a
// cycle's best nodes tie and wasmsched's node for the same pod is among
// them, upstream takes that node instead of drawing one, as its draw
// could have. Later cycles then see the same cluster on both sides.
func RunUpstreamCycles(ctx context.Context, c *Case, follow []*PodOutcome) ([]*PodOutcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	raw := c.Config
	if len(raw) == 0 {
		raw = []byte(defaultConfig)
	}
	cfg, err := decodeConfig(raw)
	if err != nil {
		return nil, err
	}

	classes := map[string]*schedulingv1.PriorityClass{}
	for _, pc := range c.PriorityClasses {
		classes[pc.Name] = pc
	}
	pending := map[*corev1.Pod]bool{}
	for _, p := range c.pendings() {
		pending[p] = true
	}
	var objs []runtime.Object
	for _, o := range c.objects() {
		if p, ok := o.(*corev1.Pod); ok && (pending[p] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			continue
		}
		o = o.DeepCopyObject()
		if err := admit(o, classes); err != nil {
			return nil, err
		}
		if p, ok := o.(*corev1.Pod); ok {
			if err := applyCreateStrategy(p); err != nil {
				return nil, err
			}
		}
		objs = append(objs, o)
	}
	var queue []*corev1.Pod
	for _, p := range c.pendings() {
		p = p.DeepCopy()
		if err := admit(p, classes); err != nil {
			return nil, err
		}
		if err := applyCreateStrategy(p); err != nil {
			return nil, err
		}
		queue = append(queue, p)
	}

	client := fake.NewClientset(objs...)
	var mu sync.Mutex
	removed := map[string]bool{}    // pods preemption deleted or evicted
	attributed := map[string]bool{} // ... and already counted for a cycle
	// Binding is a subresource the fake tracker does not apply: the
	// pod stays assumed in the scheduler's cache, which is all the next
	// cycles need.
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetSubresource() {
		case "binding":
			return true, nil, nil
		case "eviction":
			mu.Lock()
			removed[a.GetNamespace()+"/"+a.(clienttesting.CreateAction).GetObject().(interface{ GetName() string }).GetName()] = true
			mu.Unlock()
		}
		return false, nil, nil
	})
	client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		removed[a.GetNamespace()+"/"+a.(clienttesting.DeleteAction).GetName()] = true
		mu.Unlock()
		return false, nil, nil
	})

	factory := informers.NewSharedInformerFactory(client, 0)
	recorders := func(string) events.EventRecorderLogger { return &events.FakeRecorder{} }
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sched, err := scheduler.New(ctx, client, factory, nil, recorders,
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithClock(clock))
	if err != nil {
		return nil, fmt.Errorf("upstream scheduler: %w", err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("upstream informer for %v did not sync", typ)
		}
	}
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, fmt.Errorf("upstream event handlers: %w", err)
	}

	fts := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	var (
		order    []*PodOutcome
		byUID    = map[string]*PodOutcome{}
		harness  error
		evals    = map[string]*defaultpreemption.DefaultPreemption{}
		pdbLists = factory.Policy().V1().PodDisruptionBudgets().Lister()
	)
	// Each cycle starts at SchedulePod, which opens its outcome; the
	// failure handler completes the pod's latest.
	newOutcome := func(p *corev1.Pod) *PodOutcome {
		o := &PodOutcome{Pod: p.Namespace + "/" + p.Name}
		byUID[string(p.UID)] = o
		order = append(order, o)
		return o
	}
	outcome := func(p *corev1.Pod) *PodOutcome {
		if o := byUID[string(p.UID)]; o != nil {
			return o
		}
		return newOutcome(p)
	}
	fail := func(err error) {
		if harness == nil {
			harness = err
		}
	}

	schedulePod := sched.SchedulePod
	sched.SchedulePod = func(ctx context.Context, fw framework.Framework, state fwk.CycleState, pi *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
		res, err := schedulePod(ctx, fw, state, pi)
		o := newOutcome(pi.Pod)
		if err != nil {
			return res, err
		}
		o.Chosen = res.SuggestedHost
		if res.FeasibleNodes == 1 {
			o.Top = []string{res.SuggestedHost}
			return res, nil
		}
		scores, serr := scoreAll(ctx, fw, pi.Pod)
		if serr != nil {
			fail(fmt.Errorf("pod %s: %w", o.Pod, serr))
			return res, err
		}
		if len(scores) != res.FeasibleNodes {
			fail(fmt.Errorf("harness: pod %s: %d feasible nodes scored, SchedulePod found %d", o.Pod, len(scores), res.FeasibleNodes))
		}
		o.Scores = scores
		o.Top = topNodes(scores)
		if i := len(order) - 1; i < len(follow) && follow[i].Pod == o.Pod && follow[i].Chosen != "" && slices.Contains(o.Top, follow[i].Chosen) {
			res.SuggestedHost, o.Chosen = follow[i].Chosen, follow[i].Chosen
		}
		found := false
		for _, n := range o.Top {
			found = found || n == res.SuggestedHost
		}
		if !found {
			fail(fmt.Errorf("harness: pod %s: SchedulePod chose %s, not among the top-scoring %v", o.Pod, res.SuggestedHost, o.Top))
		}
		return res, nil
	}
	failureHandler := sched.FailureHandler
	sched.FailureHandler = func(ctx context.Context, fw framework.Framework, pi *framework.QueuedPodInfo, st *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		o := outcome(pi.Pod)
		o.Top, o.Chosen, o.Scores = nil, "", nil
		o.Message = st.Message()
		if ni != nil && ni.NominatedNodeName != "" && ni.Mode() == fwk.ModeOverride {
			o.Nominated = ni.NominatedNodeName
			var fit *framework.FitError
			if errors.As(st.AsError(), &fit) {
				dp := evals[fw.ProfileName()]
				if dp == nil {
					args, err := preemptionArgs(cfg, fw.ProfileName())
					if err == nil {
						dp, err = defaultpreemption.New(ctx, args, fw, fts)
					}
					if err != nil {
						fail(fmt.Errorf("harness: DefaultPreemption for the candidates: %w", err))
					}
					evals[fw.ProfileName()] = dp
				}
				if dp != nil {
					choices, err := preemptionChoices(ctx, fw, dp.Evaluator, pdbLists, pi.Pod, fit)
					if err != nil {
						fail(fmt.Errorf("harness: pod %s: %w", o.Pod, err))
					}
					o.Choices = choices
				}
			}
		}
		failureHandler(ctx, fw, pi, st, ni, start)
	}

	// Pods arrive one at a time, each a millisecond after the last.
	for i, p := range queue {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("upstream: create pending pod %s: %w", p.Name, err)
		}
		if err := waitFor(ctx, func() bool {
			pods, _ := sched.SchedulingQueue.PendingPods()
			return len(pods) == i+1
		}); err != nil {
			return nil, fmt.Errorf("upstream: pending pod %s never reached the queue", p.Name)
		}
		clock.Step(time.Millisecond)
	}
	for cycles := 0; len(sched.SchedulingQueue.PodsInActiveQ()) > 0; cycles++ {
		if cycles > 2*len(queue) {
			return nil, fmt.Errorf("harness: upstream ran %d cycles for %d pods", cycles, len(queue))
		}
		before := len(order)
		sched.ScheduleOne(ctx)
		if harness != nil {
			return nil, harness
		}
		if len(order) > before && order[len(order)-1].Nominated != "" {
			o := order[len(order)-1]
			if err := retryPreemptor(ctx, sched, factory, o, queue); err != nil {
				return nil, err
			}
			// The pods this preemption removed through the API.
			mu.Lock()
			for v := range removed {
				if !attributed[v] {
					attributed[v] = true
					o.Victims = append(o.Victims, v)
				}
			}
			mu.Unlock()
			sort.Strings(o.Victims)
			// The dry run must have found what the real PostFilter did.
			found := false
			for _, ch := range o.Choices {
				found = found || (ch.Node == o.Nominated && slices.Equal(ch.Victims, o.Victims))
			}
			if !found {
				return nil, fmt.Errorf("harness: pod %s: preemption removed %v on %s, not one of the dry run's choices %v", o.Pod, o.Victims, o.Nominated, o.Choices)
			}
		}
	}
	return order, nil
}

// retryPreemptor waits until the victims of o's preemption are gone
// from the scheduler's informer and o's pod carries its nominated node,
// then activates the pod, which kube-scheduler's queue would retry once
// its backoff ends (the clock here never gets there; wasmsched's
// preemption activates it as soon as the victims are gone).
func retryPreemptor(ctx context.Context, sched *scheduler.Scheduler, factory informers.SharedInformerFactory, o *PodOutcome, queue []*corev1.Pod) error {
	var want []*corev1.Pod
	for _, ch := range o.Choices {
		if ch.Node == o.Nominated {
			want = ch.pods
		}
	}
	lister := factory.Core().V1().Pods().Lister()
	var pod *corev1.Pod
	err := waitFor(ctx, func() bool {
		for _, v := range want { // gone from the scheduler's cache
			if _, err := sched.Cache.GetPod(v); err == nil {
				return false
			}
		}
		for _, q := range queue {
			if q.Namespace+"/"+q.Name == o.Pod {
				p, err := lister.Pods(q.Namespace).Get(q.Name)
				if err != nil || p.Status.NominatedNodeName != o.Nominated {
					return false
				}
				pod = p
			}
		}
		return pod != nil
	})
	if err != nil {
		return fmt.Errorf("harness: pod %s: the victims never left, or the nomination never arrived", o.Pod)
	}
	logger := klog.FromContext(ctx)
	// DefaultPreemption's PreEnqueue holds the pod back until its
	// preemption goroutine ends.
	if err := waitFor(ctx, func() bool {
		sched.SchedulingQueue.Activate(logger, map[string]*corev1.Pod{pod.Name: pod})
		for _, p := range sched.SchedulingQueue.PodsInActiveQ() {
			if p.UID == pod.UID {
				return true
			}
		}
		return false
	}); err != nil {
		return fmt.Errorf("harness: pod %s could not be activated after its preemption", o.Pod)
	}
	return nil
}

// waitFor polls cond for up to ten seconds.
func waitFor(ctx context.Context, cond func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("timed out")
		}
		time.Sleep(200 * time.Microsecond)
	}
	return nil
}

// topNodes are the nodes with the highest total, sorted.
func topNodes(scores []NodeScore) []string {
	var top []string
	var best int64 = -1
	for _, s := range scores {
		switch {
		case s.Total > best:
			best, top = s.Total, []string{s.Node}
		case s.Total == best:
			top = append(top, s.Node)
		}
	}
	sort.Strings(top)
	return top
}

// preemptionArgs are the profile's DefaultPreemptionArgs (defaulted by
// the decoder).
func preemptionArgs(cfg *schedconfig.KubeSchedulerConfiguration, profile string) (runtime.Object, error) {
	for _, p := range cfg.Profiles {
		if p.SchedulerName != profile {
			continue
		}
		for _, pc := range p.PluginConfig {
			if pc.Name == defaultpreemption.Name {
				return pc.Args, nil
			}
		}
	}
	return nil, fmt.Errorf("profile %s has no DefaultPreemption args", profile)
}

// preemptionChoices runs upstream's own dry run of preemption over every
// node where it might help, from the first node (with fewer than 100
// nodes every such node is a candidate, so the random start changes
// only their order), and keeps the candidates pickOneNodeForPreemption
// cannot tell apart: fewest PDB violations, then the lowest
// highest-priority victim, the lowest sum of priorities, the fewest
// victims, the latest start of the highest-priority victims. Among
// those it takes the first of a map iteration, that is any.
func preemptionChoices(ctx context.Context, fw framework.Framework, ev *preemption.Evaluator, pdbLister policylisters.PodDisruptionBudgetLister, pod *corev1.Pod, fit *framework.FitError) ([]VictimChoice, error) {
	state := framework.NewCycleState()
	if _, st, _ := fw.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() && !st.IsRejected() {
		return nil, fmt.Errorf("PreFilter for the dry run: %w", st.AsError())
	}
	nodes, err := fit.Diagnosis.NodeToStatus.NodesForStatusCode(fw.SnapshotSharedLister().NodeInfos(), fwk.Unschedulable)
	if err != nil {
		return nil, err
	}
	pdbs, err := pdbLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	cands, _, err := ev.DryRunPreemption(ctx, state, pod, nodes, pdbs, 0, int32(len(nodes)))
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	type cand struct {
		VictimChoice
		pods []*corev1.Pod
	}
	var all []cand
	for _, c := range cands {
		v := c.Victims()
		if v == nil || len(v.Pods) == 0 {
			continue
		}
		vc := cand{VictimChoice: VictimChoice{Node: c.Name(), PDBViolations: v.NumPDBViolations, pods: v.Pods}, pods: v.Pods}
		for _, p := range v.Pods {
			vc.Victims = append(vc.Victims, p.Namespace+"/"+p.Name)
		}
		sort.Strings(vc.Victims)
		all = append(all, vc)
	}
	prio := func(p *corev1.Pod) int64 {
		if p.Spec.Priority == nil {
			return 0
		}
		return int64(*p.Spec.Priority)
	}
	criteria := []func(c cand) int64{
		func(c cand) int64 { return -c.PDBViolations },
		func(c cand) int64 { // victims come by decreasing priority
			return -prio(c.pods[0])
		},
		func(c cand) int64 {
			var sum int64
			for _, p := range c.pods {
				sum += prio(p) + math.MaxInt32 + 1
			}
			return -sum
		},
		func(c cand) int64 { return -int64(len(c.pods)) },
		func(c cand) int64 {
			// The earliest start among the highest-priority victims,
			// later is better. A pod that has not started counts as
			// starting at the moment of the comparison (upstream reads
			// the clock for it): after every real start, and different
			// at each reading, so such nodes tie among themselves.
			earliest := int64(math.MaxInt64)
			for _, p := range c.pods {
				if prio(p) == prio(c.pods[0]) && p.Status.StartTime != nil {
					earliest = min(earliest, p.Status.StartTime.UnixNano())
				}
			}
			return earliest
		},
	}
	for _, f := range criteria {
		if len(all) <= 1 {
			break
		}
		best := int64(math.MinInt64)
		var kept []cand
		for _, c := range all {
			switch s := f(c); {
			case s > best:
				best, kept = s, []cand{c}
			case s == best:
				kept = append(kept, c)
			}
		}
		all = kept
	}
	out := make([]VictimChoice, 0, len(all))
	for _, c := range all {
		out = append(out, c.VictimChoice)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}
