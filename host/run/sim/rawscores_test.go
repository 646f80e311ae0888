package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
)

// tripler scores a node three times the digit its name ends with and
// normalises to [0, 100], so its raw and normalised scores differ.
type tripler struct{}

func (tripler) Name() string { return "Tripler" }
func (tripler) Score(_ *plugin.CycleState, _ *abi.Pod, n *plugin.NodeInfo) (int64, *plugin.Status) {
	name := n.Name()
	return 3 * int64(name[len(name)-1]-'0'), nil
}
func (tripler) NormalizeScore(_ *plugin.CycleState, _ *abi.Pod, scores []int64) *plugin.Status {
	plugin.DefaultNormalizeScore(abi.MaxScore, false, scores)
	return nil
}

// scoreSpy serves tripler and keeps every score request's bytes.
type scoreSpy struct {
	inner    guest.Backend
	requests [][]byte
}

func (s *scoreSpy) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := s.inner.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return &scoreSpyInstance{Instance: inst, spy: s}, nil
}

func (s *scoreSpy) Close(ctx context.Context) error { return s.inner.Close(ctx) }

type scoreSpyInstance struct {
	guest.Instance
	spy *scoreSpy
	in  []byte
}

func (i *scoreSpyInstance) Input(ctx context.Context, n int) ([]byte, error) {
	b, err := i.Instance.Input(ctx, n)
	i.in = b
	return b, err
}

func (i *scoreSpyInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	if fn == abi.FuncScore {
		i.spy.requests = append(i.spy.requests, append([]byte(nil), i.in[:n]...))
	}
	return i.Instance.Call(ctx, fn, arg, n)
}

// An unrecorded cycle's score requests are plain slot lists, byte for
// byte what a v1.7 module gets; a recorded cycle's end with the
// abi.ScoreRaw flag, and its record holds what Score returned before
// NormalizeScore next to the normalised scores.
func TestRawScoresAskedOnlyWhenRecording(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- {name: spy, path: in-process}
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: Tripler}]
`))
	if err != nil {
		t.Fatal(err)
	}
	pod := "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"
	for _, recording := range []bool{false, true} {
		o := &Objects{}
		if err := o.Read("test.yaml", strings.NewReader(probeNodes+pod)); err != nil {
			t.Fatal(err)
		}
		spy := &scoreSpy{inner: native.New(nil,
			plugin.Registration{Name: "Tripler", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return tripler{}, nil }})}
		opts := Options{Config: cfg, CacheDir: t.TempDir(), Backends: map[string]guest.Backend{"spy": spy}}
		if recording {
			opts.Explain = func(string) bool { return true }
		}
		rep, err := Run(context.Background(), o, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(spy.requests) == 0 {
			t.Fatalf("recording %v: no score request", recording)
		}
		for _, req := range spy.requests {
			plain := 4 + 4*int(abi.NewDecoder(req).U32())
			switch {
			case !recording && len(req) != plain:
				t.Errorf("unrecorded cycle: score request % x is not the plain slot list (%d bytes)", req, plain)
			case recording && (len(req) != plain+1 || req[plain] != abi.ScoreRaw):
				t.Errorf("recorded cycle: score request % x does not end with the raw-scores flag", req)
			}
		}
		if !recording {
			continue
		}
		r := rep.Explanations[len(rep.Explanations)-1]
		if len(r.ScorePlugins) != 1 || !r.ScorePlugins[0].RawKnown || !r.ScorePlugins[0].NormalizeScore || len(r.Scores) != 3 {
			t.Fatalf("record: plugins %+v, %d scored nodes", r.ScorePlugins, len(r.Scores))
		}
		for _, ns := range r.Scores {
			raw := 3 * int64(ns.Node[len(ns.Node)-1]-'0')
			if ns.Raw[0] != raw || ns.Normalized[0] != raw*abi.MaxScore/9 {
				t.Errorf("%s: raw %d normalized %d, want %d and %d", ns.Node, ns.Raw[0], ns.Normalized[0], raw, raw*abi.MaxScore/9)
			}
		}
	}
}
