// Package plugintest is what a plugin author tests with: plain `go test`,
// no Wasm, no host.
//
// It has these parts:
//
//   - Builders for pods and nodes in the fluent style of kube-scheduler's
//     st.MakePod(), so a table test states a case in one line:
//     MakePod().Name("web").Req(Res(500, 1<<30)) and
//     MakeNode().Name("n1").Label("zone", "a").Capacity(Res(4000, 8<<30)).
//     NodeWrapper.AddPod keeps a node's aggregates (requested resources,
//     pod count, ports) as the host computes them.
//   - Runners (New, RunFilter, RunScore, Schedule) that call a plugin's
//     PreFilter, Filter, PreScore, Score and NormalizeScore in the order and
//     with the rules the host applies in a scheduling cycle: PreFilter's Skip
//     skips Filter, a PreFilter rejection rejects every node, PreScore's Skip
//     leaves scores at 0, normalized scores must lie in [0, abi.MaxScore],
//     and a status code a host would refuse fails the test.
//   - For vpod plugins (ABI v1.3), MakeVPodState builds one placement
//     step (adapter pods with free capacity, nodes, zones, the vpod's
//     placements with presence) and RunVPodFilter / RunVPodScore run a
//     predicate or priority on it with an entry's raw args, as the SDK
//     runtime does ("invalid arguments" for refused args); KnativeArgs
//     wraps an args object into the JSON string a Knative policy holds;
//     PlaceVReplicas places vreplicas step by step as the vpod engine's
//     Policy strategy does.
//   - For eviction policies (ABI v1.2), EvictionNodeOf makes what a
//     policy sees of a node; RunEvictPods, RunThresholdMet and
//     RunTopEvictionPods check answers as the SDK does (candidates only,
//     no pod twice, cut to the limit and topN); EvictionRound runs one
//     coordinator round on the node (force and soft victims merged, one
//     soft victim, CandidateSort order, the burst).
//   - For preemption policies (ABI v1.1), VictimCandidatesOf offers what
//     the host offers; RunSelectVictims and RunRankCandidates check
//     answers as the host does; Preempt runs the host's dry run on one
//     node (remove the chosen pods, give them back in the policy's order,
//     violating ones first, while the preemptor still fits).
//   - Simulate, which runs the *built* .wasm module through the wasmsched
//     binary's `simulate` on a manifest and returns where each pod went
//     (and the preemptions, evictions and vpod placements), so
//     an author can test the real module, sandbox and all, from `go test`.
//     (Inside a Go module that can import the host itself, the host package
//     github.com/wasmsched/wasmsched/host/tools/wasmtest does the same in-process.)
//
// The package is test code: a plugin's main package must not import it, so
// it never reaches a Wasm module.
package plugintest
