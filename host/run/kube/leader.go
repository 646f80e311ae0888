package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection configures running as one of several replicas: the
// replicas compete for a coordination.k8s.io Lease, and only its holder
// schedules. The others keep their informers and caches warm so a
// takeover starts scheduling at once.
type LeaderElection struct {
	// LeaseName and LeaseNamespace name the Lease object.
	LeaseName, LeaseNamespace string
	// Identity is this replica's name in the Lease; empty means the host
	// name plus a random suffix, unique per process.
	Identity string
	// LeaseDuration is how long standbys wait after the last renewal
	// before taking over; RenewDeadline is how long the leader keeps
	// trying to renew before it gives up; RetryPeriod is the pause between
	// attempts. kube-scheduler's defaults are 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultLeaderElection returns kube-scheduler's timings with a Lease
// named wasmsched in kube-system.
func DefaultLeaderElection() LeaderElection {
	return LeaderElection{LeaseName: "wasmsched", LeaseNamespace: "kube-system",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// ErrLeadershipLost is returned by Serve when this replica stopped
// holding the Lease while it was still meant to run. The process should
// exit (and be restarted): its in-memory assumptions may be stale, and a
// fresh start is what makes a double binding impossible.
var ErrLeadershipLost = errors.New("leader election lost")

// uniqueIdentity is the host name and a random suffix, as
// kube-scheduler's: unique even for two replicas on one host.
func uniqueIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + "_" + string(uuid.NewUUID())
}

// Validate checks the Lease name and that the timings nest as client-go
// requires (retry < renew deadline < lease duration); serve checks its
// flags with it before contacting the API server.
func (le LeaderElection) Validate() error {
	switch {
	case le.LeaseName == "" || le.LeaseNamespace == "":
		return fmt.Errorf("leader election: lease name and namespace must be set (got %q/%q)", le.LeaseNamespace, le.LeaseName)
	case le.RetryPeriod <= 0:
		return fmt.Errorf("leader election: retry period %v must be positive", le.RetryPeriod)
	case le.RenewDeadline <= le.RetryPeriod:
		return fmt.Errorf("leader election: renew deadline %v must be longer than the retry period %v", le.RenewDeadline, le.RetryPeriod)
	case le.LeaseDuration <= le.RenewDeadline:
		return fmt.Errorf("leader election: lease duration %v must be longer than the renew deadline %v", le.LeaseDuration, le.RenewDeadline)
	}
	return nil
}

// runAsLeader waits to acquire the Lease (le is valid: Serve checked it),
// runs lead while holding it, and returns when ctx ends (nil, after releasing the Lease so a standby takes
// over at once) or when leadership is lost (ErrLeadershipLost). Either
// way lead has returned before runAsLeader does.
func runAsLeader(ctx context.Context, client kubernetes.Interface, le LeaderElection, log hclog.Logger, lead func(context.Context)) error {
	id := le.Identity
	if id == "" {
		id = uniqueIdentity()
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.LeaseNamespace, le.LeaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	log = log.With("lease", le.LeaseNamespace+"/"+le.LeaseName, "identity", id)
	// OnStartedLeading runs in a goroutine the elector starts; these let
	// runAsLeader wait for lead to return, or stop it from starting once
	// the elector has already given up.
	var mu sync.Mutex
	running, stopped := false, false
	ledDone := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: le.LeaseName,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer close(ledDone)
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				running = true
				mu.Unlock()
				log.Info("became leader; scheduling")
				lead(ctx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(holder string) {
				if holder != id {
					log.Info("standing by", "leader", holder)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	log.Info("waiting to become leader")
	elector.Run(ctx) // returns when ctx ends or leadership is lost
	mu.Lock()
	stopped = true
	wasRunning := running
	mu.Unlock()
	if wasRunning {
		<-ledDone
	}
	if ctx.Err() != nil {
		return nil
	}
	log.Error("lost the lease; stopping")
	return ErrLeadershipLost
}
