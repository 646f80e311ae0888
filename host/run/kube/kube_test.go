package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
)

func TestBindSendsABindingAndMapsGonePods(t *testing.T) {
	pod := &abi.Pod{UID: "u1", Namespace: "ns", Name: "p"}
	for _, tc := range []struct {
		name     string
		err      error
		wantGone bool
		wantErr  bool
	}{
		{"success", nil, false, false},
		{"pod deleted", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), true, true},
		{"already bound", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("already assigned")), true, true},
		{"server error", apierrors.NewInternalError(errors.New("etcd down")), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset()
			var got *corev1.Binding
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "binding" {
					return false, nil, nil
				}
				got = a.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
				return true, nil, tc.err
			})
			err := Binder{Client: client}.Bind(context.Background(), pod, "n1")
			if (err != nil) != tc.wantErr || errors.Is(err, scheduler.ErrPodGone) != tc.wantGone {
				t.Fatalf("err = %v; want error %v, gone %v", err, tc.wantErr, tc.wantGone)
			}
			if got == nil || got.Name != "p" || got.Namespace != "ns" || got.UID != "u1" || got.Target.Kind != "Node" || got.Target.Name != "n1" {
				t.Fatalf("binding sent = %+v", got)
			}
		})
	}
}

// TestBinderRetriesTransientErrors: a 503 or 500 from the API server is
// retried, as kube-scheduler v1.37's binding is; the pod binds on the
// attempt that succeeds.
func TestBinderRetriesTransientErrors(t *testing.T) {
	client := fake.NewClientset()
	calls := 0
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		calls++
		switch calls {
		case 1:
			return true, nil, apierrors.NewServiceUnavailable("apiserver restarting")
		case 2:
			return true, nil, apierrors.NewInternalError(errors.New("etcd leader changed"))
		}
		return true, nil, nil
	})
	pod := &abi.Pod{UID: "u1", Namespace: "ns", Name: "p"}
	if err := (Binder{Client: client}).Bind(context.Background(), pod, "n1"); err != nil || calls != 3 {
		t.Fatalf("err = %v after %d calls; want success on the third", err, calls)
	}
}

func TestPodConversionSkipsFinishedPods(t *testing.T) {
	done := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	if _, err := convertPod(done); err == nil {
		t.Fatal("a finished pod was converted")
	}
	running := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}}}
	p, err := convertPod(running)
	if err != nil || p.NodeName != "n1" || p.SchedulerName != "default-scheduler" {
		t.Fatalf("pod = %+v, %v", p, err)
	}
	if _, err := nodeOf("not a node"); err == nil {
		t.Fatal("a string converted to a node")
	}
}

// TestBindThroughRESTClient: against an API server (a real clientset,
// not a fake), Bind posts the Binding to the pod's binding subresource
// with no query parameters, retries a 503, and maps a 409 to a gone pod.
func TestBindThroughRESTClient(t *testing.T) {
	status := []int{http.StatusServiceUnavailable, http.StatusCreated, http.StatusConflict}
	srv := newRecordingServer(t, func(corev1.Binding) (int, any) {
		code := status[0]
		status = status[1:]
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(code)}
		if code != http.StatusCreated {
			st.Status, st.Reason = metav1.StatusFailure, metav1.StatusReasonServiceUnavailable
			if code == http.StatusConflict {
				st.Reason = metav1.StatusReasonConflict
			}
		}
		return code, st
	})
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	b := Binder{Client: client}
	if b.restClient() == nil {
		t.Fatal("a real clientset binds through the typed call")
	}
	pod := &abi.Pod{UID: "u1", Namespace: "ns", Name: "p"}
	if err := b.BindAnnotated(context.Background(), pod, "n1", map[string]string{"k": "v"}); err != nil {
		t.Fatalf("bind after a 503: %v", err)
	}
	if err := b.Bind(context.Background(), pod, "n2"); !errors.Is(err, scheduler.ErrPodGone) {
		t.Fatalf("bind answered 409: %v; want ErrPodGone", err)
	}
	const want = "POST /api/v1/namespaces/ns/pods/p/binding?"
	got, bodies := srv.requests()
	if len(got) != 3 || got[0] != want || got[1] != want || got[2] != want {
		t.Fatalf("requests = %q; want three of %q", got, want)
	}
	if b := bodies[1]; b.Name != "p" || b.Namespace != "ns" || b.UID != "u1" || b.Target.Kind != "Node" || b.Target.Name != "n1" || b.Annotations["k"] != "v" {
		t.Fatalf("binding sent = %+v", b)
	}
}

// recordingServer is an API server stand-in that decodes each request's
// JSON body as a T, records it with its method, path and query, and
// answers what respond returns (status code, JSON body).
type recordingServer[T any] struct {
	*httptest.Server
	mu     sync.Mutex
	got    []string // "METHOD path?query" per request
	bodies []T
}

// newRecordingServer starts a recordingServer, closed when t ends.
func newRecordingServer[T any](t *testing.T, respond func(T) (int, any)) *recordingServer[T] {
	t.Helper()
	s := &recordingServer[T]{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.got = append(s.got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		var body T
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		s.bodies = append(s.bodies, body)
		code, out := respond(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns what the server was sent so far.
func (s *recordingServer[T]) requests() ([]string, []T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got), slices.Clone(s.bodies)
}
