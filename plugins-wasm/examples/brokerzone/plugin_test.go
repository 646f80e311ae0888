package brokerzone

import (
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

// cluster: pods 0, 1 on n1 (zone-a), pod 2 on n2 (zone-b), pod 3 on n3
// (no zone label: "unknown").
func cluster() *plugintest.VPodWrapper {
	return plugintest.MakeVPodState().Node("n1", "zone-a").Node("n2", "zone-b").Node("n3", "").
		Pod(0, "n1", 5).Pod(1, "n1", 0).Pod(2, "n2", 5).Pod(3, "n3", 5)
}

func TestScores(t *testing.T) {
	p := plugintest.New(t, Registration, "", nil)
	for _, tc := range []struct {
		args string
		want []int64
	}{
		{plugintest.KnativeArgs(`{"Zone": "zone-a"}`), []int64{1, 1, 0, 0}},
		{plugintest.KnativeArgs(`{"Zone": "zone-b"}`), []int64{0, 0, 1, 0}},
		{plugintest.KnativeArgs(`{"zone": "unknown"}`), []int64{0, 0, 0, 1}}, // keys match case-insensitively, as Knative's
		{plugintest.KnativeArgs(`{"Zone": "zone-c"}`), []int64{0, 0, 0, 0}},
	} {
		got, err := plugintest.RunVPodScore(t, p, tc.args, cluster().Obj(t))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: scores %v (%v), want %v", tc.args, got, err, tc.want)
		}
	}
}

func TestInvalidArgs(t *testing.T) {
	p := plugintest.New(t, Registration, "", nil)
	for _, args := range []string{
		"",
		`{"Zone": "zone-a"}`, // an object, not a string holding one
		plugintest.KnativeArgs(`{}`),
		plugintest.KnativeArgs(`{"Zone": ""}`),
		plugintest.KnativeArgs(`{"Zone": 1}`),
		plugintest.KnativeArgs(`{"Zone": "zone-a", "Weight": 2}`),
	} {
		if _, err := plugintest.RunVPodScore(t, p, args, cluster().Obj(t)); err == nil {
			t.Errorf("args %s accepted", args)
		}
	}
	if _, err := Registration.New(plugintest.Args(t, `{"Zone": "zone-a"}`), nil); err == nil {
		t.Error("module args accepted")
	}
}
