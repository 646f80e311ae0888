package vpod_test

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Example schedules a vpod with MAXFILLUP over a 2-pod StatefulSet, then
// lets the autoscaler make room for the vreplicas left over.
func Example() {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{vpod.ZoneLabel: "zone-1"}}}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "knative-eventing", Name: name}, Spec: corev1.PodSpec{NodeName: "node-a"}}
	}
	source := vpod.VPod{Key: vpod.Key{Namespace: "default", Name: "my-source"}, VReplicas: 25}
	c := vpod.NewStaticCluster("knative-eventing", "dispatcher", 2,
		[]*corev1.Pod{pod("dispatcher-0"), pod("dispatcher-1")}, []*corev1.Node{node}, []vpod.VPod{source})
	s, err := vpod.New(vpod.Settings{Name: "example", Namespace: "knative-eventing", StatefulSet: "dispatcher",
		Capacity: 10, Strategy: vpod.StrategyMaxFillUp}, c, nil, vpod.Options{})
	if err != nil {
		panic(err)
	}

	ps, err := s.Schedule(ctx, source)
	after, requeue := vpod.IsRequeue(err)
	fmt.Println(ps, requeue, after)
	c.Commit(source.Key, ps)
	fmt.Println(s.Reserved())

	res, _ := s.Autoscale(ctx, false)
	fmt.Printf("replicas %d → %d\n", res.Replicas, res.Target)
	// Output:
	// [{dispatcher-0 10} {dispatcher-1 10}] true 5s
	// map[default/my-source:map[dispatcher-0:10 dispatcher-1:10]]
	// replicas 2 → 3
}
