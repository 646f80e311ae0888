// Package zonepreference is the Go twin of the Rust example module in
// plugins-rust/zonepreference: the same policy written against the Go SDK,
// so tests can run it natively (host/platform/runtime/native) as the oracle the Rust build
// must agree with, verdict for verdict and score for score. The Rust
// module is written from docs/ABI.md alone; this twin keeps it honest.
//
// Filter rejects nodes without a non-empty topology.kubernetes.io/zone
// label. Score gives 50 points to nodes in the preferredZone arg's zone
// plus up to 50 for the node's unrequested fraction of allocatable CPU.
package zonepreference

import (
	"math/bits"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
)

// Name is the plugin's name in a profile.
const Name = "ZonePreference"

// ZoneLabel is the well-known node label naming the node's zone.
const ZoneLabel = "topology.kubernetes.io/zone"

// ErrReasonNoZone is the rejection reason, in kube-scheduler's
// "node(s) ..." style so it aggregates into FailedScheduling messages.
const ErrReasonNoZone = "node(s) had no topology.kubernetes.io/zone label"

// Points of each score component; they add up to abi.MaxScore.
const (
	zonePoints    = 50
	freeCPUPoints = 50
)

// Unresolvable: evicting pods does not give a node a zone.
var statusNoZone = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonNoZone)

// ZonePreference filters out zoneless nodes and prefers one zone.
type ZonePreference struct {
	preferredZone string
}

var (
	_ plugin.FilterPlugin = (*ZonePreference)(nil)
	_ plugin.ScorePlugin  = (*ZonePreference)(nil)
)

// Registration lets a module (or a native twin) register the plugin.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin from its args: {preferredZone: string}, all
// optional; an unknown field or a non-string zone is an error.
func New(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	if err := argparse.Map(args, "", "preferredZone"); err != nil {
		return nil, err
	}
	zone, _, err := argparse.String(args.Get("preferredZone"), "preferredZone")
	if err != nil {
		return nil, err
	}
	return &ZonePreference{preferredZone: zone}, nil
}

// Name implements plugin.Plugin.
func (*ZonePreference) Name() string { return Name }

// Filter implements plugin.FilterPlugin.
func (*ZonePreference) Filter(_ *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	if z, _ := node.Node.Labels.Get(ZoneLabel); z == "" {
		return statusNoZone
	}
	return nil
}

// Score implements plugin.ScorePlugin. Integer arithmetic (a 128-bit
// product) so that every build, native or Wasm, gives the same numbers.
func (p *ZonePreference) Score(_ *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	var score int64
	if z, _ := node.Node.Labels.Get(ZoneLabel); p.preferredZone != "" && z == p.preferredZone {
		score = zonePoints
	}
	alloc := node.Node.Allocatable.MilliCPU
	if alloc > 0 {
		// Free CPU, clamped to [0, alloc]; a non-positive request (a
		// what-if removal gone below zero) leaves all of it free.
		free := alloc
		if req := node.Requested.MilliCPU; req > 0 {
			free = max(0, alloc-req)
		}
		hi, lo := bits.Mul64(uint64(free), freeCPUPoints)
		q, _ := bits.Div64(hi, lo, uint64(alloc)) // free <= alloc, so q <= 50 fits
		score += int64(q)
	}
	return score, nil
}
