// Package kube connects the scheduler to a real cluster: client-go
// informers feed cluster changes into the scheduler (and its cache and
// queue), a Binder binds through the pods/binding subresource, and a
// Recorder turns outcomes into Events and pod conditions with
// kube-scheduler's wording.
package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// Client returns a clientset for a kubeconfig file, or the in-cluster
// configuration when kubeconfig is empty.
func Client(kubeconfig string, qps float32, burst int) (kubernetes.Interface, error) {
	cfg, err := RESTConfig(kubeconfig, qps, burst)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// RESTConfig is the client configuration Client uses: a kubeconfig file,
// or the in-cluster configuration when kubeconfig is empty. Serve needs it
// (ServeOptions.RESTConfig) for the clients that are not a clientset's,
// such as metrics.k8s.io's. The kubeconfig (--kubeconfig, or the
// configuration's clientConnection.kubeconfig) must be a regular file of
// at most config.MaxFileBytes: client-go reads it whole, or waits on a
// FIFO for ever, so a device or FIFO is refused here first, naming it.
func RESTConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else if err = boundedread.Check(kubeconfig, config.MaxFileBytes, boundedread.Regular, "a kubeconfig file"); err == nil {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = "wasmsched"
	return cfg, nil
}

// Binder binds pods through the API's pods/binding subresource.
type Binder struct{ Client kubernetes.Interface }

// Bind implements framework.Binder. A pod that is gone, or already bound
// (Conflict), is reported as scheduler.ErrPodGone so it is dropped rather
// than retried. A transient failure (500, 503, connection refused) is
// retried at once a few times (10, 50, 250 ms apart), as kube-scheduler
// v1.37 does, so a blip of the API server does not cost the pod its
// assumed place and a backoff.
func (b Binder) Bind(ctx context.Context, pod *abi.Pod, node string) error {
	return b.BindAnnotated(ctx, pod, node, nil)
}

// BindAnnotated implements framework.AnnotatingBinder: the API server
// copies a Binding's annotations onto the pod in the same write that
// sets its node, so serve --record-decisions costs no request of its own.
func (b Binder) BindAnnotated(ctx context.Context, pod *abi.Pod, node string, annotations map[string]string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: types.UID(pod.UID), Annotations: annotations},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	rc := b.restClient()
	err := retry.OnError(retry.DefaultBackoff, transient, func() error {
		if rc != nil {
			return rc.Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("binding").
				Body(binding).Do(ctx).Error()
		}
		return b.Client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return fmt.Errorf("bind %s/%s to %s: %w (%v)", pod.Namespace, pod.Name, node, scheduler.ErrPodGone, err)
	}
	return fmt.Errorf("bind %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
}

// restClient is the clientset's core/v1 REST client, through which
// BindAnnotated sends the pods/binding POST the typed client's Bind
// sends, without its query parameters: Bind encodes an empty
// CreateOptions into them by reflection on every call, which took a
// quarter of a binding's CPU and most of its stack growth in a profile of
// serve at 5000 nodes, and adds nothing to the URL. It is nil when the
// clientset has none (the fake clientsets of unit tests), which then bind
// through the typed call.
func (b Binder) restClient() *rest.RESTClient {
	rc, ok := b.Client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok {
		return nil
	}
	return rc // nil for a fake clientset's
}

// transient reports the API errors kube-scheduler retries a binding on:
// an internal error, an unavailable server, a refused connection.
func transient(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || utilnet.IsConnectionRefused(err)
}
