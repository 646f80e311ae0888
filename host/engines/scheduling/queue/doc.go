// Package queue is the host's scheduling queue: it decides which pending
// pod the scheduler tries next, and keeps pods that cannot be scheduled
// out of the way until something changes that may help them, as
// kube-scheduler's queue does.
//
// Three queues hold pending pods; a popped pod is "in flight" until its
// cycle ends:
//
//	 Add / Update of an unknown pod
//	        │ PreEnqueue gates
//	        │ pass ──────────────────────────┐
//	        │ fail (gated)                   ▼
//	        ▼                          ┌───────────┐  Pop   ┌───────────┐
//	┌───────────────────┐  Activate,   │  activeQ  │ ─────► │ in flight │
//	│ unschedulablePods │  event, 5m   │ heap by   │        │ (cycle +  │
//	│  rejected pods +  │ ───────────► │ priority, │        │  binding) │
//	│  gated pods       │  (backoff    │ then time │        └─────┬─────┘
//	└───────────────────┘   over)      └───────────┘              │ failed:
//	   ▲       │ event, 5m             ▲     ▲ Activate           │ AddUnschedulable-
//	   │       │ (still backing off)   │     │                    │ IfNotPresent
//	   │       ▼                       │     │                    │
//	   │  ┌───────────┐ backoff over   │     │                    │
//	   │  │ backoffQ  │ ───────────────┘     │                    │
//	   │  │ heap by   │ (flush every 1s)     │                    │
//	   │  │ expiry    │ ◄── errors, or an interesting event ──────┤
//	   │  └───────────┘     arrived in flight                     │
//	   │                                     └── Activate in flight ┤
//	   └────────── rejected, nothing interesting arrived ─────────┘
//
// Every arrow into activeQ re-runs the PreEnqueue gates; a pod that fails
// them is parked in unschedulablePods as gated, and only events its gating
// plugin registered for, Activate or the 5-minute leftover flush make it
// try the gates again.
//
// Backoff grows with failures (1s, 2s, 4s, … capped at 10s) so a pod
// that keeps failing does not starve others; parking rejected pods until
// an event their rejecting plugins care about keeps the scheduler from
// spinning on pods nothing has changed for. Events seen while a pod is in
// flight are remembered, so a pod rejected on a state that changed during
// its cycle is requeued rather than parked for minutes.
//
// The nominator, under the same lock, remembers where preemption made room
// for which pod, so that later cycles keep that room free.
package queue
