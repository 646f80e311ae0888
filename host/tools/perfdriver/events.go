package perfdriver

import (
	"context"
	"fmt"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// EventCount is what the API server holds of the scheduler's Events on the
// measured pods: whether every pod got its Scheduled Event (a user reading
// `kubectl events` finds out where a pod went and why it waited), and
// whether any binding failed.
type EventCount struct {
	// Listed is the number of Event objects in the measured namespace.
	Listed int `json:"listed"`
	// PodsScheduled is how many measured pods have a Scheduled Event.
	PodsScheduled int `json:"podsScheduled"`
	// Scheduled and FailedScheduling count occurrences: an Event whose
	// series (events.k8s.io/v1) or count (core/v1) says it happened n
	// times counts n.
	Scheduled        int `json:"scheduled"`
	FailedScheduling int `json:"failedScheduling"`
	// FailedBindings counts the FailedScheduling occurrences whose note
	// says the binding was rejected (both kube-scheduler and wasmsched
	// write "binding rejected: ..." when the API server refuses a
	// binding).
	FailedBindings int `json:"failedBindings"`
}

// occurrences is how many times e happened: its series' count, else the
// count of a core/v1 Event it was converted from, else once.
func occurrences(e *eventsv1.Event) int {
	switch {
	case e.Series != nil && e.Series.Count > 0:
		return int(e.Series.Count)
	case e.DeprecatedCount > 1:
		return int(e.DeprecatedCount)
	}
	return 1
}

// eventsPageSize is how many Events one list request asks for.
const eventsPageSize = 1000

// countEvents lists the Events of namespace through events.k8s.io/v1 (which
// serves core/v1 Events too, converted) and counts those regarding pods.
func countEvents(ctx context.Context, client kubernetes.Interface, namespace string) (EventCount, error) {
	var c EventCount
	scheduled := map[string]bool{}
	opts := metav1.ListOptions{Limit: eventsPageSize}
	for {
		list, err := client.EventsV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return c, fmt.Errorf("list the Events of namespace %q (events.k8s.io/v1): %w", namespace, err)
		}
		for i := range list.Items {
			e := &list.Items[i]
			c.Listed++
			if e.Regarding.Kind != "Pod" {
				continue
			}
			switch e.Reason {
			case "Scheduled":
				c.Scheduled += occurrences(e)
				scheduled[e.Regarding.Name] = true
			case "FailedScheduling":
				n := occurrences(e)
				c.FailedScheduling += n
				if strings.Contains(strings.ToLower(e.Note), "binding rejected") {
					c.FailedBindings += n
				}
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	c.PodsScheduled = len(scheduled)
	return c, nil
}

// eventsPollInterval is how often waitEvents lists the Events again.
const eventsPollInterval = 2 * time.Second

// waitEvents counts the Events of namespace until every one of pods
// measured pods has its Scheduled Event or wait has passed (Events are
// posted asynchronously, after the binding), and returns the last count
// and how long it waited.
func waitEvents(ctx context.Context, client kubernetes.Interface, clk clock.Clock, namespace string, pods int, wait time.Duration) (EventCount, time.Duration, error) {
	start := clk.Now()
	for {
		c, err := countEvents(ctx, client, namespace)
		waited := clk.Since(start)
		if err != nil || c.PodsScheduled >= pods || waited >= wait {
			return c, waited, err
		}
		select {
		case <-ctx.Done():
			return c, waited, fmt.Errorf("waiting for Scheduled Events (%d of %d pods have one): %w", c.PodsScheduled, pods, context.Cause(ctx))
		case <-clk.After(min(eventsPollInterval, wait-waited)):
		}
	}
}
