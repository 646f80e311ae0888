package framework

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// testCycle is a cycle of one module, with no instance behind it: the
// runner's tests give each point a fake client getter.
func testCycle() *cycle {
	return &cycle{
		prof:    &Profile{Name: "test", failures: newFailureLog(nil)},
		clients: []*guest.Client{nil},
		down:    []error{nil},
		skip:    map[string]bool{},
		gone:    map[string]bool{},
	}
}

// healthy is a client getter for a module that can serve: the fake calls
// ignore the instance.
func healthy(context.Context, int) (*guest.Client, error) { return nil, nil }

func TestRunPluginGuard(t *testing.T) {
	errDown := errors.New("module down")
	errFatal := errors.New("fail plugin's module is down")
	errCall := errors.New("trap")
	for _, tc := range []struct {
		name   string
		ignore bool
		setup  func(c *cycle, at *pluginPoint)
		call   error // what the plugin call returns
		// want: the call ran; ran: runPlugin's verdict; err: the error
		// it must wrap (nil: none) and the text it must read.
		want, ran bool
		err       error
		msg       string
	}{
		{name: "runs", setup: func(c *cycle, at *pluginPoint) { at.client = healthy }, want: true, ran: true},
		{name: "skipped by the point", setup: func(c *cycle, at *pluginPoint) {
			at.skip = map[string]bool{"p": true}
			at.client = func(context.Context, int) (*guest.Client, error) {
				t.Error("a skipped plugin's module was asked for an instance")
				return nil, nil
			}
		}},
		{name: "gone before the call", ignore: true, setup: func(c *cycle, at *pluginPoint) {
			c.gone["p"], at.client = true, healthy
		}},
		{name: "goes down while getting its instance, under Ignore", ignore: true, setup: func(c *cycle, at *pluginPoint) {
			at.client = func(context.Context, int) (*guest.Client, error) {
				c.gone["p"] = true
				return nil, errDown
			}
		}},
		{name: "module down for Fail plugin: fatal", setup: func(c *cycle, at *pluginPoint) {
			at.client = func(context.Context, int) (*guest.Client, error) {
				c.fatal = errFatal
				return nil, errDown
			}
		}, err: errFatal, msg: errFatal.Error()},
		{name: "no instance, Ignore", ignore: true, setup: func(c *cycle, at *pluginPoint) {
			c.down[0] = errDown // the cycle's own getter reports it
		}},
		{name: "no instance, Fail", setup: func(c *cycle, at *pluginPoint) {
			c.down[0] = errDown
		}, err: errDown, msg: `running Filter plugin "p": module down`},
		{name: "call fails, Ignore", ignore: true, setup: func(c *cycle, at *pluginPoint) { at.client = healthy },
			call: errCall, want: true},
		{name: "call fails, Fail", setup: func(c *cycle, at *pluginPoint) { at.client = healthy },
			call: errCall, want: true, err: errCall, msg: `running Filter plugin "p": trap`},
		{name: "qualified point", setup: func(c *cycle, at *pluginPoint) {
			at.client, at.where = healthy, " with nominated pods"
		}, call: errCall, want: true, err: errCall, msg: `running Filter plugin "p" with nominated pods: trap`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCycle()
			at := &pluginPoint{name: metrics.Filter}
			tc.setup(c, at)
			p := &wasmPlugin{name: "p", ignore: tc.ignore}
			called := false
			ran, err := c.runPlugin(context.Background(), at, p, func(*guest.Client) error {
				called = true
				return tc.call
			})
			if called != tc.want {
				t.Errorf("call ran: %v, want %v", called, tc.want)
			}
			if ran != tc.ran {
				t.Errorf("ran = %v, want %v", ran, tc.ran)
			}
			switch {
			case tc.err == nil && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Errorf("error %v, want one wrapping %v", err, tc.err)
			case tc.err != nil && err.Error() != tc.msg:
				t.Errorf("error %q, want %q", err, tc.msg)
			}
		})
	}
}

// TestRunPluginFailurePolicy checks failurePolicy at two extension points:
// Ignore counts the failure under the point's name and goes on; Fail
// returns it naming the point and the plugin.
func TestRunPluginFailurePolicy(t *testing.T) {
	errCall := errors.New("deadline exceeded")
	for _, point := range []string{metrics.PreFilter, metrics.Score} {
		for _, ignore := range []bool{true, false} {
			c := testCycle()
			at := &pluginPoint{name: point, client: healthy}
			p := &wasmPlugin{name: "p", ignore: ignore}
			ran, err := c.runPlugin(context.Background(), at, p, func(*guest.Client) error { return errCall })
			if ran {
				t.Errorf("%s ignore=%v: a failed call ran", point, ignore)
			}
			_, logged := c.prof.failures.plugins["p"]
			if ignore {
				if err != nil || !logged {
					t.Errorf("%s Ignore: err %v, failure logged %v; want nil, true", point, err, logged)
				}
				continue
			}
			want := `running ` + point + ` plugin "p": deadline exceeded`
			if !errors.Is(err, errCall) || err.Error() != want || logged {
				t.Errorf("%s Fail: err %v (logged %v), want %q and not logged", point, err, logged, want)
			}
		}
	}
}

// fakeNominator holds the pods nominated to each node.
type fakeNominator map[string][]*abi.Pod

func (f fakeNominator) HasNominatedPods() bool { return len(f) > 0 }

func (f fakeNominator) NominatedPodsForNode(node string) []*abi.Pod { return f[node] }

func (f fakeNominator) NominatedNode(uid string) string {
	for node, pods := range f {
		for _, p := range pods {
			if p.UID == uid {
				return node
			}
		}
	}
	return ""
}

func TestNominatedPeers(t *testing.T) {
	pod := &abi.Pod{UID: "me", Priority: 5}
	nom := fakeNominator{
		"n1": {
			{UID: "higher", Priority: 10},
			{UID: "equal", Priority: 5},
			{UID: "lower", Priority: 1},
			{UID: "me", Priority: 5}, // the pod itself, nominated here
		},
		"n2": {{UID: "lower2", Priority: 4}},
	}
	uids := func(pods []*abi.Pod) string {
		var s []string
		for _, p := range pods {
			s = append(s, p.UID)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		name string
		nom  Nominator
		node string
		want string
	}{
		{"equal or higher priority, not itself", nom, "n1", "higher,equal"},
		{"only lower priority", nom, "n2", ""},
		{"no pods nominated there", nom, "n3", ""},
		{"no nominator", nil, "n1", ""},
		{"nothing nominated", fakeNominator{}, "n1", ""},
	} {
		if got := uids(nominatedPeers(pod, tc.nom, tc.node)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
