package podremoval_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

// A refusal is ErrTooManyRequests for errors.Is however deeply it is
// wrapped, keeps its cause reachable, and says which budget refused and
// when to come back.
func TestRefusedErrorIsTooManyRequests(t *testing.T) {
	cause := errors.New("Cannot evict pod as it would violate the pod's disruption budget.")
	err := fmt.Errorf("evict victim: %w", &podremoval.RefusedError{PDB: "db", RetryAfter: 10 * time.Second, Err: cause})
	if !errors.Is(err, podremoval.ErrTooManyRequests) || !errors.Is(err, cause) {
		t.Fatalf("%v: not ErrTooManyRequests wrapping its cause", err)
	}
	if errors.Is(err, podremoval.ErrNotFound) || errors.Is(err, podremoval.ErrConflict) {
		t.Fatalf("%v: a refusal is neither gone nor a conflict", err)
	}
	var refused *podremoval.RefusedError
	if !errors.As(err, &refused) || refused.PDB != "db" || refused.RetryAfter != 10*time.Second {
		t.Fatalf("%v: details lost", err)
	}
	want := "evict victim: blocked by PodDisruptionBudget db, retry after 10s: " + cause.Error()
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	if got := (&podremoval.RefusedError{}).Error(); got != podremoval.ErrTooManyRequests.Error() {
		t.Fatalf("bare refusal says %q", got)
	}
}
