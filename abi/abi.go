// Package abi is the contract between the wasmsched host and its policy
// modules: the ABI version, the names of the exported and imported
// functions, the status and extension-point codes, the scheduling view of
// pods and nodes, and the one binary codec both sides use to exchange them.
//
// The host and every guest import this same package, so the two sides
// cannot drift apart. It has no dependencies and no reflection, so it
// compiles with TinyGo and with GOOS=wasip1 GOARCH=wasm alike. The byte
// layouts are specified in docs/ABI.md; keep the two in step.
package abi

// Version of the ABI. A module reports the version it was built against
// through ExportABIVersion; the host refuses a module whose major version
// differs from its own, or whose minor version is newer than the host's
// (the module may then call or expect things the host does not have).
// Minor versions only add: new optional exports, new message fields at the
// end of a message.
const (
	VersionMajor = 1
	VersionMinor = 8
)

// RawScoresMinor is the minor version that brought ScoreRaw: a module
// older than it never gets the flag, and its score replies carry only the
// normalised scores.
const RawScoresMinor = 8

// ScoreRaw is bit 0 of the optional flags byte after a FuncScore request's
// SlotList (v1.8): the host is recording the decision and asks for each
// node's score before NormalizeScore too. The host sends the byte only
// when it asks, so a score request that does not ask is the v1.7 one.
const ScoreRaw uint8 = 1

// PackVersion packs a major and minor version into the u32 that
// ExportABIVersion returns: major in the high 16 bits.
func PackVersion(major, minor uint16) uint32 { return uint32(major)<<16 | uint32(minor) }

// UnpackVersion splits the u32 returned by ExportABIVersion.
func UnpackVersion(v uint32) (major, minor uint16) { return uint16(v >> 16), uint16(v) }

// Names of the functions a module exports. Every one is required in ABI
// v1; signatures are given in docs/ABI.md as (params) -> results, with
// i32/i64 wasm value types.
const (
	// () -> i32: the packed ABI version, see PackVersion.
	ExportABIVersion = "wasmsched_abi_version"
	// (size i32) -> i32: the address of a guest buffer of at least size
	// bytes that the host fills before the next call taking an input length.
	ExportInput = "wasmsched_input"
	// (fn i32, arg i32, len i32) -> i64: runs ABI function fn (a Func)
	// on the len input bytes; the result packs the reply's address (high
	// 32 bits) and length (low 32 bits).
	ExportCall = "wasmsched_call"
)

// Module and names of the host functions a module may import.
const (
	ImportModule = "wasmsched"
	// (level i32, ptr i32, len i32) -> (): a log line at a LogLevel.
	ImportLog = "log"
)

// Func selects what one ExportCall does. Each has its request and reply
// layout in docs/ABI.md.
type Func uint32

const (
	// FuncManifest: no input; replies with a Manifest.
	FuncManifest Func = 1
	// FuncInit: input InitRequest (plugin args); replies OK or Error.
	// Called once per instance before any other call but FuncManifest.
	FuncInit Func = 2
	// FuncSync: input SyncRequest; applies a mirror delta.
	FuncSync Func = 3
	// FuncCycle: input CycleRequest (a Pod, then from v1.6 its image
	// volumes, from v1.7 its required node features); starts a scheduling cycle for a pod
	// and resets the cycle state.
	FuncCycle Func = 4
	// FuncPreFilter: arg = plugin index; no input; replies a PluginStatus.
	FuncPreFilter Func = 5
	// FuncFilter: arg = plugin index; input = a SlotList; replies a FilterReply.
	FuncFilter Func = 6
	// FuncPreScore: arg = plugin index; input = a SlotList (the feasible
	// nodes); replies a PluginStatus.
	FuncPreScore Func = 7
	// FuncScore: arg = plugin index; input = a SlotList, then (v1.8,
	// optional) a flags byte (ScoreRaw); replies a ScoreReply with scores
	// already normalised by the plugin, followed with ScoreRaw by the
	// scores before normalisation.
	FuncScore Func = 8
	// FuncPushState: no input; saves the cycle's what-if view (pods added
	// to or removed from nodes) and cycle state, to be restored by
	// FuncPopState. Pushes nest.
	FuncPushState Func = 9
	// FuncPopState: no input; restores the view saved by the matching
	// FuncPushState.
	FuncPopState Func = 10
	// FuncAddPod: arg = node slot; input = a Pod; in the current cycle's
	// view, puts the pod on the node (aggregates updated) and tells every
	// plugin with PreFilter extensions. Used for nominated pods and
	// preemption what-ifs; the mirror itself is not changed.
	FuncAddPod Func = 11
	// FuncRemovePod: arg = node slot; input = a Pod on that node; the
	// reverse of FuncAddPod. The whole pod travels so a guest that does not
	// mirror pods can still subtract its requests and ports.
	FuncRemovePod Func = 12
	// FuncSelectVictims (ABI v1.1): arg = plugin index of a preemption
	// plugin; input = a SelectVictimsRequest (nodes with the pods of lower
	// priority than the cycle's pod); replies a SelectVictimsReply: per
	// node, which of those pods to remove, most important first, each
	// flagged as violating a PodDisruptionBudget or not.
	FuncSelectVictims Func = 13
	// FuncRankCandidates (ABI v1.1): arg = plugin index of a preemption
	// plugin; input = a RankCandidatesRequest (the nodes where removing
	// victims lets the pod fit); replies a RankCandidatesReply: candidate
	// indexes, best first.
	FuncRankCandidates Func = 14
	// FuncObserve (ABI v1.2): no plugin; input = an observe request
	// (ParseObserve): the eviction view of the nodes whose observation
	// changed (conditions, usage, per-pod QoS, flags, annotations and
	// usage). Sent only to modules with an eviction plugin, after FuncSync.
	FuncObserve Func = 15
	// FuncEvictPods (ABI v1.2): arg = plugin index of a PointEvictPods
	// plugin; input = an EvictionRequest; replies EvictPodsReply: per node
	// the pods to evict regardless of thresholds, and a condition.
	FuncEvictPods Func = 16
	// FuncThresholdMet (ABI v1.2): arg = plugin index of a
	// PointEvictionThreshold plugin; input = an EvictionRequest; replies
	// ThresholdMetReply: per node whether a threshold is met.
	FuncThresholdMet Func = 17
	// FuncTopEvictionPods (ABI v1.2): arg = plugin index of a
	// PointEvictionThreshold plugin; input = a TopEvictionRequest (the
	// nodes where its threshold is met past the grace period); replies
	// TopEvictionReply: per node the pods to evict.
	FuncTopEvictionPods Func = 18
	// FuncVPodPolicy (ABI v1.3): no plugin; input = a VPodPolicy (the
	// predicates and priorities of one Knative-style vpod policy, with
	// their raw args); replies VPodPolicyReply: per entry whether its args
	// were accepted. Sent once per policy and instance, before any step
	// naming it.
	FuncVPodPolicy Func = 19
	// FuncVPodTopology (ABI v1.3): no plugin; input = a VPodTopology (the
	// schedulable adapter pods, their nodes and zones); replies OK. Sent
	// when the topology changes, not per step.
	FuncVPodTopology Func = 20
	// FuncVPodStep (ABI v1.3): no plugin; input = a VPodStep (one
	// vreplica placement or removal step: free capacity and the vpod's
	// spread); replies VPodStepReply: every predicate and priority of the
	// named policy this module serves, over all candidate pods at once.
	FuncVPodStep Func = 21
)

// String names the function for error messages.
func (f Func) String() string {
	switch f {
	case FuncManifest:
		return "manifest"
	case FuncInit:
		return "init"
	case FuncSync:
		return "sync"
	case FuncCycle:
		return "cycle"
	case FuncPreFilter:
		return "prefilter"
	case FuncFilter:
		return "filter"
	case FuncPreScore:
		return "prescore"
	case FuncScore:
		return "score"
	case FuncPushState:
		return "push_state"
	case FuncPopState:
		return "pop_state"
	case FuncAddPod:
		return "add_pod"
	case FuncRemovePod:
		return "remove_pod"
	case FuncSelectVictims:
		return "select_victims"
	case FuncRankCandidates:
		return "rank_candidates"
	case FuncObserve:
		return "observe"
	case FuncEvictPods:
		return "evict_pods"
	case FuncThresholdMet:
		return "threshold_met"
	case FuncTopEvictionPods:
		return "top_eviction_pods"
	case FuncVPodPolicy:
		return "vpod_policy"
	case FuncVPodTopology:
		return "vpod_topology"
	case FuncVPodStep:
		return "vpod_step"
	case FuncEditView:
		return "edit_view"
	}
	return "func(" + Itoa(int64(f)) + ")"
}

// Code is a plugin's verdict, with kube-scheduler's meanings. A reply
// header carries one too: ReplyOK or ReplyError.
type Code uint8

const (
	// Success: the plugin ran and the pod may go on (Filter: the node fits).
	Success Code = 0
	// Error: the plugin failed; the host applies the plugin's failurePolicy.
	Error Code = 1
	// Unschedulable: the node does not fit now; preemption may help.
	Unschedulable Code = 2
	// UnschedulableAndUnresolvable: the node does not fit and preemption
	// cannot change that.
	UnschedulableAndUnresolvable Code = 3
	// Skip: PreFilter/PreScore say the plugin has nothing to do for this
	// pod; the host skips its Filter/Score calls for the cycle.
	Skip Code = 5
)

// String gives the code's kube-scheduler name.
func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Error:
		return "Error"
	case Unschedulable:
		return "Unschedulable"
	case UnschedulableAndUnresolvable:
		return "UnschedulableAndUnresolvable"
	case Skip:
		return "Skip"
	}
	return "Code(" + Itoa(int64(c)) + ")"
}

// Point is a bit set of the extension points a plugin implements.
type Point uint32

const (
	PointPreFilter Point = 1 << iota
	PointFilter
	PointPreScore
	PointScore
	// PointNormalizeScore: the plugin normalises its own scores inside
	// FuncScore; informational for the host.
	PointNormalizeScore
	// PointPreemption (ABI v1.1): the plugin chooses preemption victims
	// and ranks candidate nodes (FuncSelectVictims, FuncRankCandidates).
	PointPreemption
	// PointPreFilterExtensions (ABI v1.1): the plugin keeps cycle state
	// that add_pod/remove_pod update (spread counts, affinity matches),
	// so a what-if on one node can change its verdict on another. Without
	// it, and from v1.1 modules, the host may evaluate several nodes'
	// what-ifs in one view and filter them in one batched call.
	PointPreFilterExtensions
	// PointEvictionThreshold (ABI v1.2): an eviction policy that reports
	// thresholds per node (FuncThresholdMet) and picks the pods to evict
	// when one is met (FuncTopEvictionPods).
	PointEvictionThreshold
	// PointEvictPods (ABI v1.2): an eviction policy that names pods to
	// evict regardless of thresholds (FuncEvictPods).
	PointEvictPods
	// PointVPodPredicate (ABI v1.3): a Knative-style vpod predicate: it
	// says which adapter pods may take one more vreplica (FuncVPodStep).
	PointVPodPredicate
	// PointVPodPriority (ABI v1.3): a Knative-style vpod priority: it
	// scores the feasible adapter pods of a step (FuncVPodStep).
	PointVPodPriority

	// PointsEviction are the eviction points; a plugin declaring one is
	// an eviction policy, and its module gets the eviction view.
	PointsEviction = PointEvictionThreshold | PointEvictPods
	// PointsVPod are the vpod points; a plugin declaring one serves vpod
	// policies and its module gets the vpod calls.
	PointsVPod = PointVPodPredicate | PointVPodPriority

	// PointsKnown are the points ABI v1 defines; a manifest naming
	// others is refused.
	PointsKnown = PointPreFilter | PointFilter | PointPreScore | PointScore | PointNormalizeScore | PointPreemption | PointPreFilterExtensions | PointsEviction | PointsVPod
)

// Has reports whether all points in q are set in p.
func (p Point) Has(q Point) bool { return p&q == q }

// String lists the points, e.g. "Filter|Score".
func (p Point) String() string {
	names := [...]string{"PreFilter", "Filter", "PreScore", "Score", "NormalizeScore", "Preemption", "PreFilterExtensions", "EvictionThreshold", "EvictPods", "VPodPredicate", "VPodPriority"}
	s := ""
	for i, n := range names {
		if p&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if rest := p &^ PointsKnown; rest != 0 {
		if s != "" {
			s += "|"
		}
		s += "unknown(" + Itoa(int64(rest)) + ")"
	}
	if s == "" {
		return "none"
	}
	return s
}

// LogLevel of a guest log line, mapped onto go-hclog's levels by the host.
type LogLevel uint32

const (
	LogTrace LogLevel = 1
	LogDebug LogLevel = 2
	LogInfo  LogLevel = 3
	LogWarn  LogLevel = 4
	LogError LogLevel = 5
)

// LogPluginSeparator ends a plugin name at the start of a log message: a
// line "NodePorts\x1fsomething" is logged by the host as "something" with
// plugin=NodePorts. The Go SDK adds it for the plugin being run.
const LogPluginSeparator = 0x1F

// MaxScore is the highest score a Score plugin may return after
// normalisation, as kube-scheduler's framework.MaxNodeScore.
const MaxScore = 100

// Itoa formats v in decimal without strconv, so tiny guests (and the
// SDK and plugins built on this package) stay tiny.
func Itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	if neg {
		v = -v
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
