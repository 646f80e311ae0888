package kube

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
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
