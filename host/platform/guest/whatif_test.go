package guest_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// editFake is a module of a given minor version and manifest flags that
// records the what-if calls it gets, and fails edit_view when failWith is
// set.
type editFake struct {
	minor    uint16
	flags    uint32
	calls    []editCall
	failWith string
}

type editCall struct {
	fn  abi.Func
	arg uint32
	in  []byte
}

func (f *editFake) NewInstance(context.Context) (guest.Instance, error) {
	return &editFakeInstance{f: f}, nil
}
func (f *editFake) Close(context.Context) error { return nil }

type editFakeInstance struct {
	f  *editFake
	in []byte
}

func (i *editFakeInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, i.f.minor), nil
}

func (i *editFakeInstance) Input(_ context.Context, n int) ([]byte, error) {
	if n > len(i.in) {
		i.in = make([]byte, n)
	}
	return i.in[:n], nil
}

func (i *editFakeInstance) Call(_ context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	var e abi.Encoder
	switch fn {
	case abi.FuncManifest:
		e.U8(abi.ReplyOK)
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: i.f.minor, Flags: i.f.flags,
			Plugins: []abi.PluginInfo{{Name: "P", Points: abi.PointFilter}}})
		return e.B, nil
	case abi.FuncInit:
		return []byte{abi.ReplyOK}, nil
	}
	i.f.calls = append(i.f.calls, editCall{fn, arg, append([]byte(nil), i.in[:n]...)})
	if fn == abi.FuncEditView && i.f.failWith != "" {
		e.U8(abi.ReplyError)
		e.String(i.f.failWith)
		return e.B, nil
	}
	return []byte{abi.ReplyOK}, nil
}

func (i *editFakeInstance) Close(context.Context) error { return nil }

func editClient(t *testing.T, f *editFake) *guest.Client {
	t.Helper()
	m, err := guest.Load(context.Background(), f, guest.PoolConfig{Name: "editfake", PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	return c
}

// editPods: a plain pod, one with pod affinity (carried by affinity-pod
// records), a nominated pod and a pod without a UID.
func editPods() (plain, aff, nominated, noUID *abi.Pod) {
	plain = &abi.Pod{UID: "u-plain", Namespace: "ns", Name: "plain"}
	aff = &abi.Pod{UID: "u-aff", Namespace: "ns", Name: "aff", PodAffinity: &abi.PodAffinity{}}
	nominated = &abi.Pod{UID: "u-nom", Namespace: "ns", Name: "nom"}
	noUID = &abi.Pod{Namespace: "ns", Name: "anonymous"}
	return
}

func dryRunEdits() []guest.ViewEdit {
	plain, aff, nominated, noUID := editPods()
	return []guest.ViewEdit{
		{Slot: 1, Op: guest.EditRemove, Pod: plain},
		{Slot: 1, Op: guest.EditRemove, Pod: aff},
		{Slot: 2, Op: guest.EditRemove, Pod: noUID},
		{Slot: 1, Op: guest.EditRestore, Pod: plain},
		{Slot: 2, Op: guest.EditRestore, Pod: noUID},
		{Slot: 1, Op: guest.EditRemoveRestored, Pod: plain},
		{Slot: 2, Op: guest.EditRemoveRestored, Pod: noUID},
		{Slot: 3, Op: guest.EditAdd, Pod: nominated},
	}
}

// A v1.5 module gets every edit in one edit_view call; pods its records
// carry, and pods put back, are named by UID, the others travel whole.
func TestEditViewIsOneCallNamingHeldPodsByUID(t *testing.T) {
	plain, aff, nominated, noUID := editPods()
	uid := func(slot uint32, op abi.EditOp, p *abi.Pod) abi.ViewEdit {
		return abi.ViewEdit{Slot: slot, Op: op, UID: p.UID}
	}
	whole := func(slot uint32, op abi.EditOp, p *abi.Pod) abi.ViewEdit {
		return abi.ViewEdit{Slot: slot, Op: op, Pod: p}
	}
	for _, tc := range []struct {
		name  string
		flags uint32
		first abi.ViewEdit // how the plain pod's removal travels
	}{
		{"affinity pods mirrored", abi.ManifestWantsAffinityPods, whole(1, abi.EditRemovePod, plain)},
		{"all pods mirrored", abi.ManifestWantsPods, uid(1, abi.EditRemove, plain)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &editFake{minor: 5, flags: tc.flags}
			c := editClient(t, f)
			if err := c.EditView(context.Background(), dryRunEdits()); err != nil {
				t.Fatal(err)
			}
			if len(f.calls) != 1 || f.calls[0].fn != abi.FuncEditView || f.calls[0].arg != 0 {
				t.Fatalf("calls %+v, want one edit_view", f.calls)
			}
			d := abi.NewDecoder(f.calls[0].in)
			got := d.ViewEdits(nil)
			if d.Err() != nil || d.Remaining() != 0 {
				t.Fatalf("edit_view input: err %v, %d bytes left", d.Err(), d.Remaining())
			}
			want := []abi.ViewEdit{
				tc.first,
				uid(1, abi.EditRemove, aff),
				whole(2, abi.EditRemovePod, noUID),
				uid(1, abi.EditRestore, plain),
				whole(2, abi.EditAdd, noUID),
				uid(1, abi.EditRemove, plain),
				whole(2, abi.EditRemovePod, noUID),
				whole(3, abi.EditAdd, nominated),
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("edits\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// A module older than v1.5 gets one add_pod or remove_pod per edit, in
// order, each carrying the whole pod.
func TestEditViewFallsBackToPerPodCallsBeforeV15(t *testing.T) {
	f := &editFake{minor: 4, flags: abi.ManifestWantsPods}
	c := editClient(t, f)
	edits := dryRunEdits()
	if err := c.EditView(context.Background(), edits); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != len(edits) {
		t.Fatalf("%d calls for %d edits", len(f.calls), len(edits))
	}
	for i, call := range f.calls {
		wantFn := abi.FuncRemovePod
		if op := edits[i].Op; op == guest.EditAdd || op == guest.EditRestore {
			wantFn = abi.FuncAddPod
		}
		var p abi.Pod
		d := abi.NewDecoder(call.in)
		d.SetPeerMinor(4)
		d.Pod(&p)
		if call.fn != wantFn || call.arg != edits[i].Slot || d.Err() != nil || p.Name != edits[i].Pod.Name {
			t.Fatalf("call %d: %s on slot %d with pod %q (err %v); want %s on slot %d with %q",
				i, call.fn, call.arg, p.Name, d.Err(), wantFn, edits[i].Slot, edits[i].Pod.Name)
		}
	}
}

func TestEditViewSendsNothingForNoEditsAndReportsGuestErrors(t *testing.T) {
	f := &editFake{minor: 5}
	c := editClient(t, f)
	if err := c.EditView(context.Background(), nil); err != nil || len(f.calls) != 0 {
		t.Fatalf("no edits: err %v, calls %+v", err, f.calls)
	}
	f.failWith = `edit_view: edit 0: restore of pod UID "u-plain", which no edit of this cycle took off node n1`
	err := c.EditView(context.Background(), dryRunEdits()[3:4])
	if err == nil || !strings.Contains(err.Error(), "restore of pod UID") || !strings.Contains(err.Error(), "edit_view") || c.Broken() {
		t.Fatalf("guest refusal: err %v, broken %v; want an error naming edit_view, the instance kept", err, c.Broken())
	}
}
