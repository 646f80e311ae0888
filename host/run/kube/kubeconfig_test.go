package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/internal/boundedread/specialfiles"
)

// serve's kubeconfig (a flag, or the configuration's
// clientConnection.kubeconfig) is refused, naming it, when it is a device
// or a FIFO: client-go read /dev/zero until memory ran out and waited on
// a FIFO for ever.
func TestRESTConfigRefusesASpecialKubeconfig(t *testing.T) {
	fifo := specialfiles.FIFO(t, t.TempDir(), "kubeconfig")
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: is a character device, not a regular file"},
		{fifo, fifo + ": is a pipe (FIFO), not a regular file"},
	} {
		err := specialfiles.Load(t, 20*time.Second, "loading kubeconfig "+tc.path, func() error {
			_, err := RESTConfig(tc.path, 50, 100)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RESTConfig(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}
