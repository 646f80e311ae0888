package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
)

// profileSet is one generation of profiles: what one configuration
// built. The scheduler runs cycles on the current set; a reload replaces
// it between two cycles (SwapProfiles). Cycles and bindings in flight
// hold the set they started on, so they finish on it; the set's release
// (closing its pools and its registry) runs once it is both replaced and
// no longer in use.
type profileSet struct {
	byName  map[string]*profile
	release func()

	// users and retired are guarded by Scheduler.setMu.
	users   int
	retired bool
}

// newProfileSet makes a set of profiles and their shadows (by live
// profile name), starting the shadows' goroutines. Its release stops them
// and closes the shadows before running release.
func (s *Scheduler) newProfileSet(profiles []*framework.Profile, shadows map[string]*framework.Profile, release func()) (*profileSet, error) {
	ps := &profileSet{byName: map[string]*profile{}}
	for _, p := range profiles {
		if _, dup := ps.byName[p.Name]; dup {
			return nil, fmt.Errorf("two profiles named %q", p.Name)
		}
		p.Instrument(s.metrics)
		ps.byName[p.Name] = &profile{Profile: p, attempts: s.metrics.Profile(p.Name)}
	}
	for live, sh := range shadows {
		if sh == nil {
			continue
		}
		p := ps.byName[live]
		if p == nil {
			return nil, fmt.Errorf("shadow %q of profile %q, which does not exist", sh.Name, live)
		}
		p.shadow = s.newShadowRunner(live, sh)
	}
	ps.release = func() {
		for _, p := range ps.byName {
			if p.shadow != nil {
				p.shadow.stop()
			}
		}
		if release != nil {
			release()
		}
	}
	return ps, nil
}

// Shadow returns the shadow profile of a live profile (nil: none).
func (s *Scheduler) Shadow(name string) *framework.Profile {
	if p := s.set.Load().byName[name]; p != nil && p.shadow != nil {
		return p.shadow.prof
	}
	return nil
}

// stopShadows stops the set's shadow goroutines without closing
// anything else (a set that never served).
func (ps *profileSet) stopShadows() {
	for _, p := range ps.byName {
		if p.shadow != nil {
			p.shadow.halt()
		}
	}
}

// names lists the set's profile names, sorted.
func (ps *profileSet) names() []string {
	names := make([]string, 0, len(ps.byName))
	for n := range ps.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// acquire returns the current set, held until done is called.
func (s *Scheduler) acquire() *profileSet {
	s.setMu.Lock()
	ps := s.set.Load()
	ps.users++
	s.setMu.Unlock()
	return ps
}

// done gives back a set acquire returned; the last user of a replaced
// set releases it.
func (s *Scheduler) done(ps *profileSet) {
	s.setMu.Lock()
	ps.users--
	last := ps.retired && ps.users == 0
	s.setMu.Unlock()
	if last && ps.release != nil {
		ps.release()
	}
}

// SwapProfiles makes profiles (with shadows, by live profile name) the
// ones every later cycle uses. Cycles and
// bindings in flight finish on the profiles they started with; those are
// released (the release given with them) once the last of them ends.
// release, run once when this new set is in turn replaced (or at Close)
// and drained, closes what it owns. The new set must have the same
// profile names as the running one: the queue and the informers decided
// which pods are ours by those names.
func (s *Scheduler) SwapProfiles(profiles []*framework.Profile, shadows map[string]*framework.Profile, release func()) error {
	ps, err := s.newProfileSet(profiles, shadows, release)
	if err != nil {
		return err
	}
	s.setMu.Lock()
	old := s.set.Load()
	if got, want := ps.names(), old.names(); strings.Join(got, ",") != strings.Join(want, ",") {
		s.setMu.Unlock()
		ps.stopShadows()
		return fmt.Errorf("the profiles would change from %s to %s: adding or removing a profile (schedulerName) needs a restart",
			strings.Join(want, ", "), strings.Join(got, ", "))
	}
	s.set.Store(ps)
	old.retired = true
	last := old.users == 0
	s.setMu.Unlock()
	if last && old.release != nil {
		old.release()
	}
	return nil
}

// Close releases the serving profiles (once cycles and bindings in
// flight on them end) and wakes a loop waiting for a binding slot, which
// then returns queue.ErrClosed. The scheduler must not run cycles
// afterwards.
func (s *Scheduler) Close() {
	s.closeOnce.Do(func() {
		s.slots.close()
		s.setMu.Lock()
		ps := s.set.Load()
		ps.retired = true
		last := ps.users == 0
		s.setMu.Unlock()
		if last && ps.release != nil {
			ps.release()
		}
	})
}

// LastPod is the pod of the most recent cycle (nil before the first): a
// reload's canary runs a real pod when there is one.
func (s *Scheduler) LastPod() *abi.Pod { return s.lastPod.Load() }
