package guest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// peerFake is a module with one PreFilter/Filter/PreScore plugin, built
// for a given minor version. It keeps the last cycle request and answers
// PreFilter and PreScore with the body the test sets.
type peerFake struct {
	minor     uint16
	cycle     []byte
	statusOut abi.PluginStatus
}

func (f *peerFake) NewInstance(context.Context) (guest.Instance, error) {
	return &peerFakeInstance{f: f, in: make([]byte, 1<<12)}, nil
}
func (f *peerFake) Close(context.Context) error { return nil }

type peerFakeInstance struct {
	f  *peerFake
	in []byte
}

func (i *peerFakeInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, i.f.minor), nil
}

func (i *peerFakeInstance) Input(_ context.Context, n int) ([]byte, error) {
	if n > len(i.in) {
		i.in = make([]byte, n)
	}
	return i.in[:n], nil
}

func (i *peerFakeInstance) Call(_ context.Context, fn abi.Func, _ uint32, n int) ([]byte, error) {
	e := abi.Encoder{}
	e.U8(abi.ReplyOK)
	switch fn {
	case abi.FuncManifest:
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: i.f.minor, Plugins: []abi.PluginInfo{
			{Name: "P", Points: abi.PointPreFilter | abi.PointFilter | abi.PointPreScore}}})
	case abi.FuncCycle:
		i.f.cycle = append([]byte(nil), i.in[:n]...)
	case abi.FuncPreFilter, abi.FuncPreScore:
		if i.f.minor < 4 { // the reply ended after the reasons
			e.U8(uint8(i.f.statusOut.Code))
			e.Strings(i.f.statusOut.Reasons)
			break
		}
		e.PluginStatus(&i.f.statusOut)
	}
	return e.B, nil
}

func (i *peerFakeInstance) Close(context.Context) error { return nil }

func peerClient(t *testing.T, minor uint16) (*peerFake, *guest.Client) {
	t.Helper()
	f := &peerFake{minor: minor}
	m, err := guest.Load(context.Background(), f, guest.PoolConfig{Name: "peerfake", PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// The pod of a cycle reaches each module in the format of its minor
// version: a v1.3 module reads it whole, with no bytes it does not know,
// a v1.5 module gets the pod alone, without v1.6's image volumes, and a
// v1.6 module no v1.7 required features.
func TestCyclePodIsWrittenForTheModulesMinorVersion(t *testing.T) {
	pod := &abi.Pod{UID: "u", Name: "p", Containers: []abi.Container{{Given: abi.GivesMemory}},
		PodLevel:     &abi.PodLevelRequests{Given: abi.GivesCPU, Requests: abi.Resources{MilliCPU: 500}},
		ImageVolumes: []string{"model:v1"}, RequiredFeatures: 1 << 4}
	for _, minor := range []uint16{3, 5, 6, abi.VersionMinor} {
		f, c := peerClient(t, minor)
		if err := c.StartCycle(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		var got abi.Pod
		d := abi.NewDecoder(f.cycle)
		d.SetPeerMinor(minor)
		d.Pod(&got)
		if minor >= 6 {
			got.ImageVolumes = d.Strings()
		}
		if minor >= 7 {
			got.RequiredFeatures = d.Uvarint()
		}
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("v1.%d: err %v, %d bytes left", minor, d.Err(), d.Remaining())
		}
		if (got.PodLevel != nil) != (minor >= 4) {
			t.Errorf("v1.%d: pod-level requests sent = %v", minor, got.PodLevel != nil)
		}
		if (len(got.ImageVolumes) == 1) != (minor >= 6) {
			t.Errorf("v1.%d: image volumes sent = %q", minor, got.ImageVolumes)
		}
		if (got.RequiredFeatures == 1<<4) != (minor >= 7) {
			t.Errorf("v1.%d: required features sent = %b", minor, got.RequiredFeatures)
		}
	}
}

func TestPreFilterNarrowing(t *testing.T) {
	f, c := peerClient(t, abi.VersionMinor)
	ctx := context.Background()
	f.statusOut = abi.PluginStatus{Code: abi.Success, Narrowed: true, Nodes: []string{"n1", "n2"}}
	st, err := c.PreFilter(ctx, 0)
	if err != nil || !st.Narrowed || len(st.Nodes) != 2 {
		t.Fatalf("PreFilter = %+v, %v; want narrowed to two nodes", st, err)
	}
	// Only a PreFilter Success may narrow.
	f.statusOut = abi.PluginStatus{Code: abi.Success, Narrowed: true, Nodes: []string{"n1"}}
	if _, err := c.PreScore(ctx, 0, nil); !errors.Is(err, guest.ErrInvalidReply) {
		t.Errorf("PreScore with node names: err %v, want ErrInvalidReply", err)
	}
	f.statusOut = abi.PluginStatus{Code: abi.Unschedulable, Reasons: []string{"no"}, Narrowed: true}
	if _, err := c.PreFilter(ctx, 0); !errors.Is(err, guest.ErrInvalidReply) {
		t.Errorf("Unschedulable with node names: err %v, want ErrInvalidReply", err)
	}
	// A pre-v1.4 reply (no narrowing byte) reads as not narrowed.
	f2, c2 := peerClient(t, 3)
	f2.statusOut = abi.PluginStatus{Code: abi.Success}
	st, err = c2.PreFilter(ctx, 0)
	if err != nil || st.Narrowed {
		t.Fatalf("old reply: %+v, %v", st, err)
	}
}
