package guest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// Guest text that carries a decision (a refusal, a rejection's reason, an
// error) is read on its raw value: text made only of control characters
// cleans to nothing, and must not then read as no refusal, no reason or
// no message. Each place gets a placeholder instead.

// unprintable is guest text with nothing printable in it.
const unprintable = "\x01\x02\x1b[2J\n"

func errorReplyOf(msg string) []byte {
	var e abi.Encoder
	e.U8(abi.ReplyError)
	e.String(msg)
	return e.B
}

// TestUnprintableVPodRefusalIsARefusal: a vpod policy entry refused with
// text that cleans to nothing is still refused (the vpod engine reads ""
// as accepted args).
func TestUnprintableVPodRefusalIsARefusal(t *testing.T) {
	f := &fixedReplies{replies: map[abi.Func][]byte{}}
	c := fixedClient(t, f)
	f.replies[abi.FuncVPodPolicy] = okBody(func(e *abi.Encoder) {
		e.VPodPolicyReply(&abi.VPodPolicyReply{Invalid: []string{"", unprintable}})
	})
	r, err := c.EnsureVPodPolicy(context.Background(), twoEntries())
	if err != nil {
		t.Fatal(err)
	}
	if r.Invalid[0] != "" || r.Invalid[1] != "(refusal with no printable text)" {
		t.Fatalf("answers %q; want the first accepted and the second refused with a placeholder", r.Invalid)
	}
}

// TestUnprintableErrorReplyKeepsAMessage: an error reply (to init, a
// plugin's refusal of its args, or any call) whose text cleans to nothing,
// or that has none, still says it is an error.
func TestUnprintableErrorReplyKeepsAMessage(t *testing.T) {
	for _, msg := range []string{unprintable, ""} {
		f := &fixedReplies{replies: map[abi.Func][]byte{abi.FuncInit: errorReplyOf(msg)}}
		_, err := guest.Load(context.Background(), f, guest.PoolConfig{Name: "fixed", PoolSize: 1})
		if err == nil || !strings.HasSuffix(err.Error(), `init: (error with no printable text)`) {
			t.Errorf("init refused with %q: %v; want the placeholder", msg, err)
		}
		f.replies[abi.FuncInit] = okOnly
		c := fixedClient(t, f)
		f.replies[abi.FuncFilter] = errorReplyOf(msg)
		if _, err := c.Filter(context.Background(), 0, []uint32{0}); err == nil || !strings.HasSuffix(err.Error(), `filter plugin "P": (error with no printable text)`) {
			t.Errorf("filter error reply %q: %v; want the placeholder", msg, err)
		}
	}
}

// TestUnprintableReasonsKeepAPlaceholder: the reasons of a status (its
// code decides) keep a placeholder when they clean to nothing, in every
// reply that carries them, and an Error code's message shows it.
func TestUnprintableReasonsKeepAPlaceholder(t *testing.T) {
	ctx := context.Background()
	const want = "(reason with no printable text)"
	f := &fixedReplies{replies: map[abi.Func][]byte{}}
	c := fixedClient(t, f)

	f.replies[abi.FuncPreFilter] = okBody(func(e *abi.Encoder) {
		e.PluginStatus(&abi.PluginStatus{Code: abi.Unschedulable, Reasons: []string{unprintable, "", "ok"}})
	})
	if st, err := c.PreFilter(ctx, 0); err != nil || len(st.Reasons) != 3 || st.Reasons[0] != want || st.Reasons[1] != "" || st.Reasons[2] != "ok" {
		t.Errorf("prefilter reasons %q (%v); want [%q \"\" \"ok\"]", st.Reasons, err, want)
	}
	f.replies[abi.FuncPreScore] = okBody(func(e *abi.Encoder) {
		e.PluginStatus(&abi.PluginStatus{Code: abi.Error, Reasons: []string{unprintable}})
	})
	if _, err := c.PreScore(ctx, 0, []uint32{0}); !errors.Is(err, guest.ErrPluginError) || !strings.HasSuffix(err.Error(), "plugin returned Error: "+want) {
		t.Errorf("prescore Error: %v; want the placeholder as its reason", err)
	}
	f.replies[abi.FuncFilter] = okBody(func(e *abi.Encoder) {
		e.FilterReply(&abi.FilterReply{Indexes: []uint16{1}, Entries: []abi.FilterEntry{{Code: abi.Unschedulable, Reasons: []string{unprintable}}}})
	})
	if r, err := c.Filter(ctx, 0, []uint32{0}); err != nil || r.Entries[0].Reasons[0] != want {
		t.Errorf("filter reasons %v (%v); want the placeholder", r, err)
	}
	f.replies[abi.FuncSelectVictims] = okBody(func(e *abi.Encoder) {
		e.SelectVictimsReply([]abi.NodeVictims{{Code: abi.UnschedulableAndUnresolvable, Reasons: []string{unprintable}}})
	})
	if vs, err := c.SelectVictims(ctx, 0, []abi.NodeCandidates{{Slot: 1}}); err != nil || vs[0].Reasons[0] != want {
		t.Errorf("select_victims reasons %v (%v); want the placeholder", vs, err)
	}
	f.replies[abi.FuncEvictPods] = okBody(func(e *abi.Encoder) {
		e.EvictPodsReply([]abi.NodeEvictPods{{Pods: []abi.EvictPod{{Pod: 0, Reason: unprintable}}}})
	})
	req := &abi.EvictionRequest{Limit: 1, Nodes: []abi.EvictionNode{{Slot: 1, Candidates: []uint32{0}}}}
	if rs, err := c.EvictPods(ctx, 0, req); err != nil || rs[0].Pods[0].Reason != want {
		t.Errorf("evict_pods reason %v (%v); want the placeholder", rs, err)
	}
}

// TestUnprintableVPodStepTextKeepsAPlaceholder: a predicate's refusal
// reason and a priority's error message that clean to nothing keep a
// placeholder.
func TestUnprintableVPodStepTextKeepsAPlaceholder(t *testing.T) {
	f := &fixedReplies{replies: map[abi.Func][]byte{}}
	c := fixedClient(t, f)
	p := twoEntries()
	registerVPod(t, f, c, p)
	f.replies[abi.FuncVPodStep] = okBody(func(e *abi.Encoder) {
		e.VPodStepReply(&abi.VPodStepReply{
			Verdicts: []abi.VPodVerdict{{Entry: 1, Code: abi.Unschedulable, Reason: unprintable}},
			Scores:   []abi.VPodScores{{Entry: 1, Scores: []int64{0}}},
			Errors:   []abi.VPodScoreError{{Entry: 1, Candidate: 0, Message: unprintable}},
		})
	})
	r, err := c.VPodStep(context.Background(), p, &abi.VPodStep{Policy: p.ID, Topology: 1, Free: []int32{1}, Candidates: []uint32{0}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdicts[0].Reason != "(reason with no printable text)" || r.Errors[0].Message != "(error with no printable text)" {
		t.Errorf("verdict reason %q, score error %q; want placeholders", r.Verdicts[0].Reason, r.Errors[0].Message)
	}
}
