package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// Recorder reports outcomes to the API as kube-scheduler does: a
// Scheduled or FailedScheduling Event on the pod, and on failure the
// condition PodScheduled=False with the reason and message (and
// status.nominatedNodeName when preemption nominated the pod). It
// implements scheduler.Recorder without blocking the scheduling cycle:
// Events go through client-go's asynchronous events.k8s.io/v1
// broadcaster (k8s.io/client-go/tools/events, as kube-scheduler posts
// them), status patches through a queue drained by Run.
//
// The broadcaster never drops an Event for want of room: every Event it
// is given waits in a goroutine of its own for the Event client's rate
// limiter and a write slot (instanceSink; its bounded queues only hand
// Events over to those goroutines), so a backlog delays Events instead
// of losing them. An Event repeated for the same object version (same
// type, reason, action and reporting controller) within six minutes
// becomes one Event whose series counts the repeats. Status patches are
// never dropped either: a pod has at most one condition patch and one
// nomination patch waiting, the latest (patchQueue).
type Recorder struct {
	client      kubernetes.Interface
	broadcaster events.EventBroadcaster // nil: legacy in use
	legacy      record.EventBroadcaster // core/v1, when events.k8s.io/v1 is not served
	instance    string
	mu          sync.Mutex
	events      map[string]events.EventRecorder // by reporting controller
	patches     patchQueue
	// decisions writes the decision summaries of attempts that did not
	// bind (AnnotateDecision).
	decisions *decisionWriter
	log       hclog.Logger
	// pods reads the informer's copy of a pod (nil until Serve's
	// informers set it; see usePods).
	pods atomic.Pointer[podLookup]
}

// podLookup returns the informer's copy of a pod, or nil.
type podLookup func(namespace, name string) *corev1.Pod

// usePods makes the recorder read pods from the informer, as
// kube-scheduler reads the pod it reports on: an Event's reference then
// carries the pod's resourceVersion, so a pod whose status changed (a new
// failure message) gets a new Event rather than a count on the old one,
// and a failure whose condition the pod already shows writes nothing.
func (r *Recorder) usePods(l podLookup) { r.pods.Store(&l) }

// cached is the informer's copy of pod, or nil (no lookup yet, not
// there, or another pod of the same name).
func (r *Recorder) cached(pod *abi.Pod) *corev1.Pod {
	l := r.pods.Load()
	if l == nil {
		return nil
	}
	p := (*l)(pod.Namespace, pod.Name)
	if p == nil || string(p.UID) != pod.UID {
		return nil
	}
	return p
}

type statusPatch struct {
	namespace, name string
	uid             string
	kind            patchKind
	body            []byte
}

// patchKind tells a pod's status patches apart: each kind writes its own
// fields, so a newer patch replaces a waiting one of its kind only.
type patchKind uint8

const (
	patchCondition patchKind = iota
	patchNomination
)

type patchKey struct {
	uid  string
	kind patchKind
}

// patchQueue holds the status patches waiting for Run: first in, first
// out, the latest per pod and kind (a newer patch takes the waiting one's
// place), as kube-scheduler's API dispatcher merges a pod's pending
// calls. It is unbounded, but holds at most two patches per pod the
// scheduler reported on, so under a backlog the conditions users read
// come late rather than never.
type patchQueue struct {
	mu      sync.Mutex
	waiting map[patchKey]statusPatch
	order   []patchKey // keys in waiting, oldest first
	wake    chan struct{}
}

func newPatchQueue() patchQueue {
	return patchQueue{waiting: map[patchKey]statusPatch{}, wake: make(chan struct{}, 1)}
}

func (q *patchQueue) add(p statusPatch) {
	k := patchKey{p.uid, p.kind}
	q.mu.Lock()
	if _, ok := q.waiting[k]; !ok {
		q.order = append(q.order, k)
	}
	q.waiting[k] = p
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest waiting patch.
func (q *patchQueue) next() (statusPatch, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		return statusPatch{}, false
	}
	k := q.order[0]
	q.order[0] = patchKey{}
	q.order = q.order[1:]
	if len(q.order) == 0 {
		q.order = nil // let the drained array go
	}
	p := q.waiting[k]
	delete(q.waiting, k)
	return p, true
}

func (q *patchQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}

// RecorderOptions configure NewRecorder.
type RecorderOptions struct {
	// Client writes pod status patches.
	Client kubernetes.Interface
	// EventClient posts Events; nil: Client. kube-scheduler posts Events
	// through a clientset of their own, so a burst of Events waits for
	// its own rate limiter and never delays a binding.
	EventClient kubernetes.Interface
	// Instance is the Events' reportingInstance (core/v1: source.host):
	// the replica's identity, so Events tell which replica scheduled a
	// pod. Empty: the host name.
	Instance string
	Log      hclog.Logger
}

// eventsGroupVersion is the API the Events are posted to when served.
const eventsGroupVersion = "events.k8s.io/v1"

// discoveryPatience bounds how long NewRecorder keeps asking an API
// server that does not answer whether it serves events.k8s.io/v1 before
// taking the answer every server since Kubernetes 1.19 gives (yes).
const discoveryPatience = 30 * time.Second

// NewRecorder returns a recorder whose Events name the pod's profile
// (its schedulerName) as their reporting controller, as kube-scheduler's
// do, and o.Instance as their reporting instance. Events go to
// events.k8s.io/v1 when the API server serves it (asked once, here) and
// to core/v1 otherwise, as client-go's event broadcaster adapter chooses.
// Recording starts at once and stops when ctx ends.
func NewRecorder(ctx context.Context, o RecorderOptions) *Recorder {
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ec := o.EventClient
	if ec == nil {
		ec = o.Client
	}
	instance := o.Instance
	if instance == "" {
		instance, _ = os.Hostname()
	}
	instance = truncate(instance, reportingInstanceLimit)
	r := &Recorder{
		client:   o.Client,
		instance: instance,
		events:   map[string]events.EventRecorder{},
		patches:  newPatchQueue(),
		log:      log,
	}
	r.decisions = newDecisionWriter(o.Client, log, r.cached)
	if servesEventsV1(ctx, ec, log) {
		r.broadcaster = events.NewBroadcaster(newInstanceSink(ec, instance))
		if err := r.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			log.Error("events: cannot record to the API server", "error", err)
		}
	} else {
		log.Info("the API server does not serve " + eventsGroupVersion + "; Events are posted as core/v1 Events")
		r.legacy = record.NewBroadcaster(record.WithContext(ctx))
		r.legacy.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: ec.CoreV1().Events("")})
	}
	return r
}

// servesEventsV1 asks the API server's discovery whether it serves
// events.k8s.io/v1. "Not found" is a no; while the server does not
// answer it asks again, for discoveryPatience, and then assumes yes.
func servesEventsV1(ctx context.Context, client kubernetes.Interface, log hclog.Logger) bool {
	ctx, cancel := context.WithTimeout(ctx, discoveryPatience)
	defer cancel()
	var last error
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		_, err := client.Discovery().ServerResourcesForGroupVersion(eventsGroupVersion)
		switch {
		case err == nil:
			return true
		case apierrors.IsNotFound(err):
			return false
		}
		last = err
		select {
		case <-ctx.Done():
			log.Warn("events: discovery of "+eventsGroupVersion+" did not answer; posting Events there", "error", last)
			return true
		case <-time.After(delay):
		}
	}
}

// instanceSink is client-go's events.k8s.io/v1 sink with the Events'
// reportingInstance set to the replica's identity (client-go's
// recorders set the controller's name and the host name), and at most
// cap(slots) writes in flight.
//
// client-go's broadcaster writes each Event from a goroutine of its own,
// bounded only by the client's rate limiter. A backlog drained at a high
// --kube-api-qps would put thousands of Event writes in flight at once,
// past the API server's streams per HTTP/2 connection, so client-go
// would open connection after connection and bindings would wait behind
// Events. With the slots, waiting Events stay goroutines parked here
// (kube-scheduler's wait the same way, in its rate limiter), none is
// dropped, and the writes in flight stay well under one connection's
// streams beside the bindings' (DefaultMaxBindingsInFlight) and the
// informers' watches.
//
// Create posts through the events.k8s.io/v1 REST client when the
// clientset has one, as the typed client's Create does but without its
// query parameters: it encodes an empty CreateOptions into them by
// reflection on every call, a quarter of an Event's CPU in a profile of
// serve at 5000 nodes, for nothing in the URL. The fake clientsets of unit
// tests have none, and post through the typed client.
type instanceSink struct {
	events.EventSinkImpl
	rest     *rest.RESTClient // nil: the typed client
	instance string
	slots    chan struct{}
}

// maxEventWritesInFlight is the slots of instanceSink. An Event write
// takes the API server a few milliseconds, so 16 in flight post
// thousands a second: more than a backlog drain binds.
const maxEventWritesInFlight = 16

func newInstanceSink(client kubernetes.Interface, instance string) *instanceSink {
	rc, _ := client.EventsV1().RESTClient().(*rest.RESTClient) // nil for a fake clientset's
	return &instanceSink{EventSinkImpl: events.EventSinkImpl{Interface: client.EventsV1()}, rest: rc, instance: instance,
		slots: make(chan struct{}, maxEventWritesInFlight)}
}

// acquire takes a write slot; release gives it back.
func (s *instanceSink) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("post an Event: %w", ctx.Err())
	}
}

func (s *instanceSink) release() { <-s.slots }

func (s *instanceSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	e.ReportingInstance = s.instance
	if s.rest == nil {
		return s.EventSinkImpl.Create(ctx, e)
	}
	if e.Namespace == "" {
		return nil, errors.New("can't create an event with empty namespace")
	}
	created := &eventsv1.Event{}
	err := s.rest.Post().UseProtobufAsDefault().Namespace(e.Namespace).Resource("events").Body(e).Do(ctx).Into(created)
	if err != nil {
		return nil, err
	}
	return created, nil
}

func (s *instanceSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	e.ReportingInstance = s.instance
	return s.EventSinkImpl.Update(ctx, e)
}

func (s *instanceSink) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	return s.EventSinkImpl.Patch(ctx, e, data)
}

// recorderFor returns the Event recorder of a reporting controller (a
// profile's name, or one of the engines' components).
func (r *Recorder) recorderFor(controller string) events.EventRecorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	er := r.events[controller]
	if er == nil {
		if r.broadcaster != nil {
			er = r.broadcaster.NewRecorder(scheme.Scheme, controller)
		} else {
			er = record.NewEventRecorderAdapter(r.legacy.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controller, Host: r.instance}))
		}
		r.events[controller] = er
	}
	return er
}

// Limits the API server puts on an events.k8s.io/v1 Event: a longer
// note or instance is refused (and the Event lost), so they are cut.
const (
	noteLimit              = 1024
	reportingInstanceLimit = 128
)

// truncate cuts s to at most n bytes, at a rune boundary, ending it with
// " ..." as kube-scheduler ends a FailedScheduling note it cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const suffix = " ..."
	cut := n - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

// event posts one Event through the controller's recorder, the note as
// given (never read as a format) and cut to the API's limit.
func (r *Recorder) event(controller string, regarding, related runtime.Object, warning bool, reason, action, note string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.recorderFor(controller).Eventf(regarding, related, typ, reason, action, "%s", truncate(note, noteLimit))
}

// Actions of the Events, as kube-scheduler names them (Scheduling,
// Binding, Preempting) and for what the eviction engine does.
const (
	ActionScheduling = "Scheduling"
	ActionBinding    = "Binding"
	ActionPreempting = "Preempting"
	ActionEvicting   = "Evicting"
	ActionLoading    = "Loading"
)

// ref is the Event reference of a pod: with the resourceVersion of
// the informer's copy when there is one (cached), as kube-scheduler's
// reference to the pod object it holds.
func ref(pod *abi.Pod, cached *corev1.Pod) *corev1.ObjectReference {
	o := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: types.UID(pod.UID)}
	if cached != nil {
		o.ResourceVersion = cached.ResourceVersion
	}
	return o
}

// podRef is ref with the informer's copy looked up.
func (r *Recorder) podRef(pod *abi.Pod) *corev1.ObjectReference { return ref(pod, r.cached(pod)) }

// Scheduled implements scheduler.Recorder. A decision summary still
// waiting for the pod is dropped: its Binding carried the bound one.
func (r *Recorder) Scheduled(pod *abi.Pod, profile, node string) {
	r.decisions.drop(pod.UID)
	r.event(profile, r.podRef(pod), nil, false, "Scheduled", ActionBinding, fmt.Sprintf("Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node))
}

// FailedScheduling implements scheduler.Recorder. As kube-scheduler's, it
// writes the PodScheduled=False condition only when the pod does not
// show it already (with this reason and message), and keeps the
// condition's lastTransitionTime when its status stays False; so a pod
// that fails again the same way costs no write, keeps its
// resourceVersion, and its Events become one series.
func (r *Recorder) FailedScheduling(pod *abi.Pod, profile, reason, message string) {
	cached := r.cached(pod)
	r.event(profile, ref(pod, cached), nil, true, "FailedScheduling", ActionScheduling, message)
	since := metav1.Now()
	if cached != nil {
		for _, c := range cached.Status.Conditions {
			if c.Type != corev1.PodScheduled || c.Status != corev1.ConditionFalse {
				continue
			}
			if c.Reason == reason && c.Message == message {
				return
			}
			if !c.LastTransitionTime.IsZero() {
				since = c.LastTransitionTime
			}
		}
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": string(corev1.PodScheduled), "status": string(corev1.ConditionFalse),
		"reason": reason, "message": message, "lastTransitionTime": since.UTC().Format(time.RFC3339),
	}}}})
	if err == nil {
		r.patches.add(statusPatch{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, kind: patchCondition, body: body})
	}
}

// Nominated implements scheduler.Recorder.
func (r *Recorder) Nominated(pod *abi.Pod, _, node string) {
	body, err := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": node}})
	if err == nil {
		r.patches.add(statusPatch{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, kind: patchNomination, body: body})
	}
}

// AnnotateDecision implements scheduler.DecisionAnnotator: summary, the
// decision of an attempt that did not bind pod, goes to the pod's
// decision.AnnotationKey annotation in a metadata patch of its own,
// written by Run's workers; only the latest summary per pod waits, and
// none when the informer's copy of the pod carries it already.
func (r *Recorder) AnnotateDecision(pod *abi.Pod, summary string) {
	r.decisions.add(pod, summary)
}

// Run applies queued status patches and decision annotations until ctx
// ends. A pod deleted in the meantime (NotFound) is skipped.
func (r *Recorder) Run(ctx context.Context) {
	defer r.shutdown()
	decisionsDone := make(chan struct{})
	go func() {
		defer close(decisionsDone)
		r.decisions.run(ctx)
	}()
	defer func() { <-decisionsDone }()
	for ctx.Err() == nil {
		p, ok := r.patches.next()
		if !ok {
			select {
			case <-ctx.Done():
			case <-r.patches.wake:
			}
			continue
		}
		_, err := r.client.CoreV1().Pods(p.namespace).Patch(ctx, p.name, types.StrategicMergePatchType, p.body, metav1.PatchOptions{}, "status")
		if err != nil && ctx.Err() == nil {
			r.log.Debug("patch pod status", "pod", p.namespace+"/"+p.name, "error", fmt.Sprint(err))
		}
	}
}

func (r *Recorder) shutdown() {
	if r.broadcaster != nil {
		r.broadcaster.Shutdown()
	}
	if r.legacy != nil {
		r.legacy.Shutdown()
	}
}

// ModuleUnavailable reports, as a Warning Event on the scheduler's own
// Pod (named by the POD_NAME and POD_NAMESPACE environment variables, the
// downward API's), each FailOpen module the serving configuration runs
// without. Outside a Pod (the variables unset) it reports nothing: the
// log, the metrics and /readyz say it too.
func (r *Recorder) ModuleUnavailable(unavailable []modules.Unavailable) {
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || ns == "" {
		return
	}
	self := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: name}
	for _, u := range unavailable {
		r.event(SelfComponent, self, nil, true, "ModuleUnavailable", ActionLoading,
			fmt.Sprintf("module %q (%s) could not be fetched or verified; failStrategy FailOpen: running without its plugins: %v", u.Module, u.Field, u.Err))
	}
}

// SelfComponent is the reporting controller of the Events on the
// scheduler's own Pod.
const SelfComponent = "wasmsched"
