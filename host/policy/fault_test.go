package policy_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/host/policy"
)

func TestGuestFaultKeepsTheMessageAndAddsTheKind(t *testing.T) {
	cause := errors.New("wasm error: unreachable")
	err := fmt.Errorf("outer: %w", policy.GuestFault(policy.ErrGuestTrap, cause))
	if err.Error() != "outer: wasm error: unreachable" {
		t.Errorf("message %q: the mark must not change it", err)
	}
	if !errors.Is(err, policy.ErrGuestTrap) || !errors.Is(err, cause) {
		t.Error("the marked error is neither the kind nor its cause")
	}
	if errors.Is(err, policy.ErrDeadlineExceeded) {
		t.Error("a trap is also a deadline")
	}
	if policy.GuestFault(policy.ErrGuestTrap, nil) != nil {
		t.Error("marking no error made one")
	}
}
