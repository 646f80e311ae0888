package guest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/host/platform/guest"
)

func TestGuestFaultKeepsTheMessageAndAddsTheKind(t *testing.T) {
	cause := errors.New("wasm error: unreachable")
	err := fmt.Errorf("outer: %w", guest.Fault(guest.ErrGuestTrap, cause))
	if err.Error() != "outer: wasm error: unreachable" {
		t.Errorf("message %q: the mark must not change it", err)
	}
	if !errors.Is(err, guest.ErrGuestTrap) || !errors.Is(err, cause) {
		t.Error("the marked error is neither the kind nor its cause")
	}
	if errors.Is(err, guest.ErrDeadlineExceeded) {
		t.Error("a trap is also a deadline")
	}
	if guest.Fault(guest.ErrGuestTrap, nil) != nil {
		t.Error("marking no error made one")
	}
}
