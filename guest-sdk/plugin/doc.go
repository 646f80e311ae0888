// Package plugin is what a wasmsched policy author programs against: one
// small interface per extension point, a Status, a CycleState, and the
// node view a plugin filters and scores.
//
// Plugins are written per node, as in kube-scheduler; the SDK (package
// guest) runs them over whole batches of nodes in one call from the host
// and keeps the node mirror they read. The same plugin source compiles to
// a Wasm module (TinyGo or Go wasip1) and natively, so it can be unit
// tested with plain `go test` and run inside the host as a native twin.
//
// A plugin implements Plugin and any of PreFilterPlugin, FilterPlugin,
// PreScorePlugin, ScorePlugin (optionally ScoreNormalizer); eviction
// policies implement ThresholdPlugin or EvictPodsPlugin (eviction.go), and
// Knative-style vpod predicates and priorities VPodPredicatePlugin or
// VPodPriorityPlugin (vpod.go). It is built
// by a Factory from its args; a module lists its plugins with
// guest.Register in an init function.
//
// Guests run one call at a time: a plugin needs no locks, and may keep
// per-cycle data in CycleState or in its own fields (reset in PreFilter).
// TinyGo modules are built with -scheduler=none: no go statements.
package plugin
