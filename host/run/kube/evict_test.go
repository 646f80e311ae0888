package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

// budgetRefusal is the body kube-apiserver writes when a budget's status
// lags its spec (pkg/registry/core/pod/storage/eviction.go): 429 with
// retryAfterSeconds 10 and a DisruptionBudget cause naming the budget.
func budgetRefusal(t *testing.T) []byte {
	t.Helper()
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget db is still being processed by the server."})
	err.ErrStatus.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, jerr := json.Marshal(err.ErrStatus)
	if jerr != nil {
		t.Fatal(jerr)
	}
	return body
}

// evictionServer answers every request with code, the Retry-After header
// and body, and counts the requests; paths collects what was asked.
type evictionServer struct {
	requests atomic.Int32
	paths    chan string
}

func newEvictionServer(t *testing.T, code int, retryAfter, contentType string, body []byte) (*evictionServer, kubernetes.Interface) {
	t.Helper()
	s := &evictionServer{paths: make(chan string, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.paths <- r.Method + " " + r.URL.Path
		w.Header().Set("Content-Type", contentType)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s, client
}

// The Eviction API's 429 with Retry-After reaches both callers on the
// first answer: one request, the Retry-After and the budget read from it.
// client-go would otherwise repeat the request ten times, 10 s apart. The
// context's deadline only bounds the test if that regresses.
func TestEvictionCallsSeeTheFirst429(t *testing.T) {
	victim := &abi.Pod{UID: "u1", Namespace: "ns", Name: "db"}
	grace := int64(5)
	for _, tc := range []struct {
		name string
		call func(context.Context, kubernetes.Interface) error
	}{
		{"preemption", func(ctx context.Context, c kubernetes.Interface) error {
			return PreemptionAPI{Client: c}.EvictPod(ctx, victim, nil)
		}},
		{"preemption dry run", func(ctx context.Context, c kubernetes.Interface) error {
			return PreemptionAPI{Client: c}.EvictPodDryRun(ctx, victim)
		}},
		{"eviction killer", func(ctx context.Context, c kubernetes.Interface) error {
			return EvictionAPI{Client: c}.EvictPod(ctx, victim, &grace)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client := newEvictionServer(t, http.StatusTooManyRequests, "10", "application/json", budgetRefusal(t))
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err := tc.call(ctx, client)
			if n := srv.requests.Load(); n != 1 {
				t.Fatalf("the server saw %d requests, want 1 (err %v)", n, err)
			}
			if p := <-srv.paths; p != "POST /api/v1/namespaces/ns/pods/db/eviction" {
				t.Fatalf("request %s", p)
			}
			pdb, retryAfter := refusalSeen(t, err)
			if pdb != "db" || retryAfter != 10*time.Second {
				t.Fatalf("%v: budget %q, Retry-After %v; want db, 10s", err, pdb, retryAfter)
			}
			if !strings.Contains(err.Error(), "still being processed") {
				t.Fatalf("error %q does not carry the server's cause", err)
			}
		})
	}
}

// refusalSeen checks that err is the caller's 429 and returns what it
// says about the budget and Retry-After.
func refusalSeen(t *testing.T, err error) (string, time.Duration) {
	t.Helper()
	var refused *podremoval.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("%v: not a 429", err)
	}
	if !errors.Is(err, podremoval.ErrTooManyRequests) {
		t.Fatalf("%v is not ErrTooManyRequests", err)
	}
	return refused.PDB, refused.RetryAfter
}

// Any other answer client-go would repeat (a 429 without a budget, as
// API Priority and Fairness sends; a 504 when the budget's update kept
// conflicting) also comes back at once: the callers retry on their own
// terms, and tell the 429 apart.
func TestEvictionCallsDoNotRepeatOtherRetryAfterAnswers(t *testing.T) {
	victim := &abi.Pod{UID: "u1", Namespace: "ns", Name: "db"}
	timeout, err := json.Marshal(func() metav1.Status {
		s := apierrors.NewTimeoutError(`couldn't update PodDisruptionBudget "db" due to conflicts`, 10).ErrStatus
		s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		return s
	}())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("429 without a budget", func(t *testing.T) {
		srv, client := newEvictionServer(t, http.StatusTooManyRequests, "3", "text/plain", []byte("Too many requests, please try again later.\n"))
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err := PreemptionAPI{Client: client}.EvictPod(ctx, victim, nil)
		if n := srv.requests.Load(); n != 1 {
			t.Fatalf("the server saw %d requests, want 1 (err %v)", n, err)
		}
		if pdb, retryAfter := refusalSeen(t, err); pdb != "" || retryAfter != 3*time.Second {
			t.Fatalf("%v: budget %q, Retry-After %v; want none, 3s", err, pdb, retryAfter)
		}
	})
	t.Run("504 with Retry-After", func(t *testing.T) {
		srv, client := newEvictionServer(t, http.StatusGatewayTimeout, "10", "application/json", timeout)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		grace := int64(0)
		err := EvictionAPI{Client: client}.EvictPod(ctx, victim, &grace)
		if n := srv.requests.Load(); n != 1 {
			t.Fatalf("the server saw %d requests, want 1 (err %v)", n, err)
		}
		var tooMany *podremoval.RefusedError
		if err == nil || errors.As(err, &tooMany) || !apierrors.IsTimeout(err) {
			t.Fatalf("504 mapped to %v", err)
		}
	})
}

// refusalOf reads every DisruptionBudget cause the Eviction API words.
func TestRefusalOfNamesTheBudget(t *testing.T) {
	for msg, want := range map[string]string{
		"The disruption budget db needs 1 healthy pods and has 1 currently":                           "db",
		"The disruption budget web-pdb is still being processed by the server.":                       "web-pdb",
		"The disruption budget x does not allow evicting pods currently because it failed sync: boom": "x",
		"something else": "",
	} {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: policyv1.DisruptionBudgetCause, Message: msg}}
		r := refusalOf(err)
		if r.pdb != want || r.cause != msg || r.retryAfter != 0 {
			t.Errorf("%q: %+v, want budget %q", msg, r, want)
		}
	}
}
