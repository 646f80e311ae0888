package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// Recorder reports outcomes to the API as kube-scheduler does: a
// Scheduled or FailedScheduling Event on the pod, and on failure the
// condition PodScheduled=False with the reason and message (and
// status.nominatedNodeName when preemption nominated the pod). It
// implements scheduler.Recorder without blocking the scheduling cycle:
// Events go through client-go's asynchronous broadcaster, status patches
// through a queue drained by Run.
type Recorder struct {
	client      kubernetes.Interface
	broadcaster record.EventBroadcaster
	host        string
	mu          sync.Mutex
	events      map[string]record.EventRecorder // by profile
	patches     chan statusPatch
	log         hclog.Logger
}

type statusPatch struct {
	namespace, name string
	uid             string
	body            []byte
}

// NewRecorder returns a recorder whose Events name the pod's profile
// (its schedulerName) as their source component, as kube-scheduler's
// do, and host as the source host (the replica's identity, so Events
// tell which replica scheduled a pod).
func NewRecorder(client kubernetes.Interface, host string, log hclog.Logger) *Recorder {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &Recorder{
		client:      client,
		broadcaster: b,
		host:        host,
		events:      map[string]record.EventRecorder{},
		patches:     make(chan statusPatch, 1024),
		log:         log,
	}
}

// recorderFor returns the Event recorder of a profile.
func (r *Recorder) recorderFor(profile string) record.EventRecorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	er := r.events[profile]
	if er == nil {
		er = r.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: profile, Host: r.host})
		r.events[profile] = er
	}
	return er
}

func ref(pod *abi.Pod) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: types.UID(pod.UID)}}
}

// Scheduled implements scheduler.Recorder.
func (r *Recorder) Scheduled(pod *abi.Pod, profile, node string) {
	r.recorderFor(profile).Eventf(ref(pod), corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
}

// FailedScheduling implements scheduler.Recorder.
func (r *Recorder) FailedScheduling(pod *abi.Pod, profile, reason, message string) {
	r.recorderFor(profile).Event(ref(pod), corev1.EventTypeWarning, "FailedScheduling", message)
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": string(corev1.PodScheduled), "status": string(corev1.ConditionFalse),
		"reason": reason, "message": message, "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}}}})
	if err == nil {
		r.enqueue(statusPatch{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, body: body})
	}
}

// Nominated implements scheduler.Recorder.
func (r *Recorder) Nominated(pod *abi.Pod, _, node string) {
	body, err := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": node}})
	if err == nil {
		r.enqueue(statusPatch{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, body: body})
	}
}

func (r *Recorder) enqueue(p statusPatch) {
	select {
	case r.patches <- p:
	default:
		r.log.Warn("status patch queue full; dropping a pod condition update", "pod", p.namespace+"/"+p.name)
	}
}

// Run applies queued status patches until ctx ends. A pod deleted in the
// meantime (NotFound) is skipped.
func (r *Recorder) Run(ctx context.Context) {
	defer r.broadcaster.Shutdown()
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-r.patches:
			_, err := r.client.CoreV1().Pods(p.namespace).Patch(ctx, p.name, types.StrategicMergePatchType, p.body, metav1.PatchOptions{}, "status")
			if err != nil && ctx.Err() == nil {
				r.log.Debug("patch pod status", "pod", p.namespace+"/"+p.name, "error", fmt.Sprint(err))
			}
		}
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
	er := r.recorderFor("wasmsched")
	for _, u := range unavailable {
		er.Eventf(self, corev1.EventTypeWarning, "ModuleUnavailable",
			"module %q (%s) could not be fetched or verified; failStrategy FailOpen: running without its plugins: %v", u.Module, u.Field, u.Err)
	}
}
