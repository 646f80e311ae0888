package guest_test

import (
	"context"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// scripted is a module whose instances answer every plugin call with the
// reply body the test sets (after an OK header): a fake, cheap enough to
// fuzz the reply checks with. The conformance suite (host/platform/runtime/backendtest,
// "replies") holds real instances of every backend to the same checks.
type scripted struct{ body []byte }

func (s *scripted) NewInstance(context.Context) (guest.Instance, error) {
	return &scriptedInstance{s: s, in: make([]byte, 1<<16)}, nil
}
func (s *scripted) Close(context.Context) error { return nil }

type scriptedInstance struct {
	s  *scripted
	in []byte
}

func (i *scriptedInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, abi.VersionMinor), nil
}

func (i *scriptedInstance) Input(_ context.Context, n int) ([]byte, error) {
	if n > len(i.in) {
		i.in = make([]byte, n)
	}
	return i.in[:n], nil
}

func (i *scriptedInstance) Call(_ context.Context, fn abi.Func, _ uint32, _ int) ([]byte, error) {
	e := abi.Encoder{}
	e.U8(abi.ReplyOK)
	switch fn {
	case abi.FuncManifest:
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor, Plugins: []abi.PluginInfo{
			{Name: "P", Points: abi.PointPreFilter | abi.PointFilter | abi.PointPreScore | abi.PointScore | abi.PointPreemption}}})
	case abi.FuncInit, abi.FuncSync, abi.FuncCycle:
	default:
		e.B = append(e.B, i.s.body...)
	}
	return e.B, nil
}

func (i *scriptedInstance) Close(context.Context) error { return nil }

func scriptedClient(t testing.TB) (*scripted, *guest.Client) {
	t.Helper()
	s := &scripted{}
	m, err := guest.Load(context.Background(), s, guest.PoolConfig{Name: "scripted", PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func statusBody(code abi.Code, reasons ...string) []byte {
	var e abi.Encoder
	e.PluginStatus(&abi.PluginStatus{Code: code, Reasons: reasons})
	return e.B
}

func filterBody(r abi.FilterReply) []byte {
	var e abi.Encoder
	e.FilterReply(&r)
	return e.B
}

func victimsBody(v ...abi.NodeVictims) []byte {
	var e abi.Encoder
	e.SelectVictimsReply(v)
	return e.B
}

// FuzzReplyValidation feeds arbitrary reply bodies, out-of-range codes
// among the seeds, to every typed plugin call: none may panic, and what
// is accepted holds only codes the function may return, clean reasons
// and scores in range.
func FuzzReplyValidation(f *testing.F) {
	f.Add(statusBody(77))
	f.Add(statusBody(abi.Skip, "x"))
	f.Add(statusBody(255, "\x1b]0;title\x07"))
	f.Add(filterBody(abi.FilterReply{Indexes: []uint16{1, 2}, Entries: []abi.FilterEntry{{Code: 4}, {Code: abi.Unschedulable, Reasons: []string{"a\nb"}}}}))
	f.Add(filterBody(abi.FilterReply{Indexes: []uint16{1, 0}, Entries: []abi.FilterEntry{{Code: 200, Reasons: []string{"x"}}}}))
	f.Add(victimsBody(abi.NodeVictims{Code: 9}, abi.NodeVictims{Code: abi.Success}))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		s, c := scriptedClient(t)
		s.body = body
		clean := func(rs []string) {
			for _, r := range rs {
				if guest.Text(r) != r {
					t.Fatalf("accepted an unclean reason %q", r)
				}
			}
		}
		for _, fn := range []abi.Func{abi.FuncPreFilter, abi.FuncPreScore} {
			var st abi.PluginStatus
			var err error
			if fn == abi.FuncPreFilter {
				st, err = c.PreFilter(ctx, 0)
			} else {
				st, err = c.PreScore(ctx, 0, []uint32{0})
			}
			if err == nil {
				if st.Code == abi.Error || st.Code > abi.Skip || st.Code == 4 || (fn == abi.FuncPreScore && st.Code != abi.Success && st.Code != abi.Skip) {
					t.Fatalf("%s accepted code %d", fn, st.Code)
				}
				clean(st.Reasons)
				// Cleaning never empties a reason the guest gave.
				var raw abi.PluginStatus
				abi.NewDecoder(body).PluginStatus(&raw)
				for i, r := range st.Reasons {
					if (r == "") != (raw.Reasons[i] == "") {
						t.Fatalf("reason %q read as %q", raw.Reasons[i], r)
					}
				}
			}
		}
		if r, err := c.Filter(ctx, 0, []uint32{0, 1}); err == nil {
			for _, e := range r.Entries {
				if e.Code != abi.Error && e.Code != abi.Unschedulable && e.Code != abi.UnschedulableAndUnresolvable {
					t.Fatalf("filter accepted code %d", e.Code)
				}
				clean(e.Reasons)
			}
		}
		if scores, err := c.Score(ctx, 0, []uint32{0}); err == nil {
			for _, sc := range scores {
				if sc < 0 || sc > abi.MaxScore {
					t.Fatalf("accepted score %d", sc)
				}
			}
		}
		if vs, err := c.SelectVictims(ctx, 0, []abi.NodeCandidates{{Slot: 1}, {Slot: 2}}); err == nil {
			for _, v := range vs {
				if v.Code != abi.Success && v.Code != abi.Unschedulable && v.Code != abi.UnschedulableAndUnresolvable {
					t.Fatalf("select_victims accepted code %d", v.Code)
				}
				clean(v.Reasons)
			}
		}
	})
}
