package scheduler

// OnBindingSlotWait makes s call f each time its loop finds every binding
// slot taken and is about to wait for one.
func OnBindingSlotWait(s *Scheduler, f func()) { s.slots.onWait = f }
