package guest_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// scoreFake is a module with one Score plugin built for a given minor
// version. It keeps the last score request and replies normalized scores
// and, when the request asks (abi.ScoreRaw) and sendRaw is set, raw ones.
type scoreFake struct {
	minor       uint16
	sendRaw     bool
	request     []byte
	norm, rawes []int64
}

func (f *scoreFake) NewInstance(context.Context) (guest.Instance, error) {
	return &scoreFakeInstance{f: f, in: make([]byte, 1<<12)}, nil
}
func (f *scoreFake) Close(context.Context) error { return nil }

type scoreFakeInstance struct {
	f  *scoreFake
	in []byte
}

func (i *scoreFakeInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, i.f.minor), nil
}

func (i *scoreFakeInstance) Input(_ context.Context, n int) ([]byte, error) {
	return i.in[:n], nil
}

func (i *scoreFakeInstance) Call(_ context.Context, fn abi.Func, _ uint32, n int) ([]byte, error) {
	e := abi.Encoder{}
	e.U8(abi.ReplyOK)
	switch fn {
	case abi.FuncManifest:
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: i.f.minor, Plugins: []abi.PluginInfo{
			{Name: "S", Points: abi.PointScore | abi.PointNormalizeScore}}})
	case abi.FuncScore:
		i.f.request = append(i.f.request[:0], i.in[:n]...)
		var raw []int64
		if at := 4 + 4*len(i.f.norm); n > at && i.in[at]&abi.ScoreRaw != 0 && i.f.sendRaw {
			raw = i.f.rawes
		}
		e.ScoreReply(i.f.norm, raw)
	}
	return e.B, nil
}

func (i *scoreFakeInstance) Close(context.Context) error { return nil }

func scoreClient(t *testing.T, f *scoreFake) *guest.Client {
	t.Helper()
	m, err := guest.Load(context.Background(), f, guest.PoolConfig{Name: "scorefake", PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A score request asks for raw scores only from a module of v1.8 or later
// and only through ScoreWithRaw: otherwise it is the plain slot list, byte
// for byte, and the client returns no raw scores. A v1.8 module asked
// for them replies them after the normalized ones.
func TestRawScoresOnlyWhenAskedAndKnown(t *testing.T) {
	ctx := context.Background()
	slots := []uint32{3, 7}
	plain := abi.Encoder{}
	plain.AppendSlots(slots)
	asking := append(slices.Clone(plain.B), abi.ScoreRaw)
	for _, minor := range []uint16{abi.RawScoresMinor - 1, abi.RawScoresMinor} {
		f := &scoreFake{minor: minor, sendRaw: true, norm: []int64{100, 0}, rawes: []int64{-5, 12345}}
		c := scoreClient(t, f)
		scores, err := c.Score(ctx, 0, slots)
		if err != nil || !slices.Equal(scores, f.norm) || !bytes.Equal(f.request, plain.B) {
			t.Fatalf("v1.%d Score: %v %v, request %x, want %x", minor, scores, err, f.request, plain.B)
		}
		scores, raw, err := c.ScoreWithRaw(ctx, 0, slots)
		if err != nil || !slices.Equal(scores, f.norm) {
			t.Fatalf("v1.%d ScoreWithRaw: %v %v", minor, scores, err)
		}
		if minor < abi.RawScoresMinor {
			if raw != nil || !bytes.Equal(f.request, plain.B) {
				t.Errorf("v1.%d ScoreWithRaw: raw %v, request %x; want none and the plain %x", minor, raw, f.request, plain.B)
			}
			continue
		}
		got := make([]int64, raw.Len())
		for i := range got {
			got[i] = raw.At(i)
		}
		if !slices.Equal(got, f.rawes) || !bytes.Equal(f.request, asking) {
			t.Errorf("v1.%d ScoreWithRaw: raw %v, request %x; want %v and %x", minor, got, f.request, f.rawes, asking)
		}
	}
}

// A v1.8 module that leaves out the raw scores it was asked for sent a
// broken reply: the client says so instead of inventing them.
func TestMissingRawScoresAreABrokenReply(t *testing.T) {
	f := &scoreFake{minor: abi.RawScoresMinor, norm: []int64{1, 2}}
	c := scoreClient(t, f)
	if _, _, err := c.ScoreWithRaw(context.Background(), 0, []uint32{0, 1}); err == nil {
		t.Fatal("a reply without the raw scores asked for was accepted")
	}
}
