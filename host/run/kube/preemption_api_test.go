package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

func TestPreemptionAPIMapsErrorsAndSendsTheRightCalls(t *testing.T) {
	victim := &abi.Pod{UID: "u1", Namespace: "ns", Name: "v"}
	client := fake.NewSimpleClientset()
	var evicted *policyv1.Eviction
	var patched string
	evictErr := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		evicted = a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, evictErr
	})
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patched = a.GetSubresource() + " " + string(a.(k8stesting.PatchAction).GetPatch())
		return true, nil, nil
	})
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "v")
	})
	api := PreemptionAPI{Client: client}
	ctx := context.Background()
	if err := api.EvictPod(ctx, victim, nil); !errors.Is(err, podremoval.ErrTooManyRequests) {
		t.Fatalf("evict: %v, want ErrTooManyRequests", err)
	}
	if evicted == nil || evicted.Name != "v" || string(*evicted.DeleteOptions.Preconditions.UID) != "u1" {
		t.Fatalf("eviction %+v", evicted)
	}
	if err := api.DeletePod(ctx, victim, nil); !errors.Is(err, podremoval.ErrNotFound) {
		t.Fatalf("delete: %v, want ErrNotFound", err)
	}
	if err := api.MarkVictim(ctx, victim, "default-scheduler: preempting"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(patched, "status ") || !strings.Contains(patched, `"type":"DisruptionTarget"`) || !strings.Contains(patched, `"reason":"PreemptionByScheduler"`) {
		t.Fatalf("patch %s", patched)
	}
	evictErr = apierrors.NewInternalError(errors.New("etcd down"))
	if err := api.EvictPod(ctx, victim, nil); err == nil || errors.Is(err, podremoval.ErrTooManyRequests) || errors.Is(err, podremoval.ErrNotFound) {
		t.Fatalf("500 mapped to %v", err)
	}
}
