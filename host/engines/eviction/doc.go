// Package eviction is wasmsched's eviction coordinator, after Katalyst's
// eviction manager: eviction policies (Wasm plugins declaring the ABI
// v1.2 eviction points) report, for every node in one batched call each,
// whether a threshold is met and which pods should go; the coordinator
// alone decides what happens. Each round (every sync period) it
//
//	observes   the cached nodes and pods, their conditions and usage
//	asks       every policy EvictPods and ThresholdMet, then (once all
//	           have answered) TopEvictionPods for the thresholds met past
//	           their grace period, in Katalyst's order
//	aggregates force and soft candidates across policies, by pod UID
//	filters    critical, static, mirror, skipped and terminating pods
//	sorts      with CandidateSort, at most one soft victim per node
//	throttles  to the burst per node and a cluster-wide rate
//	evicts     through the asynchronous killer (Eviction API by default)
//	taints     nodes with eviction.wasmsched.io/<condition> while a policy
//	           reports a node condition, so new pods avoid them
//
// Katalyst runs one manager per node; wasmsched runs one coordinator in
// the scheduler (the leader) over every node of its cache, so the state
// Katalyst keeps per plugin is kept here per plugin and node.
package eviction
