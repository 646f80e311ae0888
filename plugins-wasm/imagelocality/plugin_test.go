package imagelocality

import (
	"slices"
	"testing"

	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

func TestNormalizedImageName(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                      "nginx:latest",
		"nginx:1.25":                 "nginx:1.25",
		"registry:5000/app":          "registry:5000/app:latest",
		"registry:5000/app:v2":       "registry:5000/app:v2",
		"repo/app@sha256:0123456789": "repo/app@sha256:0123456789",
	} {
		if got := normalizedImageName(in); got != want {
			t.Errorf("normalizedImageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name   string
		handle *plugintest.Handle
		pod    *plugintest.PodWrapper
		// volumes are the pod's image volumes (abi.Pod.ImageVolumes).
		volumes []string
		nodes   []*plugintest.NodeWrapper
		want    []int64
	}{
		{
			name:   "small image scores 0, larger one scores by size",
			handle: &plugintest.Handle{NodeCount: 2, Images: map[string]int{"gcr.io/40:latest": 1, "gcr.io/300:latest": 1}},
			pod:    plugintest.MakePod().Container("gcr.io/40").Container("gcr.io/300"),
			nodes: []*plugintest.NodeWrapper{
				plugintest.MakeNode().Name("n1").Image(40*mb, "gcr.io/40:latest"),
				plugintest.MakeNode().Name("n2").Image(300*mb, "gcr.io/300:latest"),
			},
			// n1: 40MB * 1/2 = 20MB < 23MB -> 0.
			// n2: 150MB; max = 2 containers * 1000MB; 100*(150-23)/(2000-23) = 6.
			want: []int64{0, 6},
		},
		{
			name:   "image larger than the top threshold scores max",
			handle: &plugintest.Handle{NodeCount: 1, Images: map[string]int{"big:1": 1}},
			pod:    plugintest.MakePod().Container("big:1"),
			nodes:  []*plugintest.NodeWrapper{plugintest.MakeNode().Image(2000*mb, "big:1")},
			want:   []int64{100},
		},
		{
			name:   "image missing on the node",
			handle: &plugintest.Handle{NodeCount: 2, Images: map[string]int{"big:1": 1}},
			pod:    plugintest.MakePod().Container("big:1"),
			nodes:  []*plugintest.NodeWrapper{plugintest.MakeNode().Image(500*mb, "other:1")},
			want:   []int64{0},
		},
		{
			name:   "init containers count, for the sum and the threshold",
			handle: &plugintest.Handle{NodeCount: 1, Images: map[string]int{"a:1": 1}},
			pod:    plugintest.MakePod().InitContainer("a:1").Container("b:1"),
			nodes:  []*plugintest.NodeWrapper{plugintest.MakeNode().Image(500*mb, "a:1")},
			// 100*(500-23)/(2000-23) = 24
			want: []int64{24},
		},
		{
			name:   "an image used twice counts twice",
			handle: &plugintest.Handle{NodeCount: 1, Images: map[string]int{"a:1": 1}},
			pod:    plugintest.MakePod().Container("a:1").Container("a:1"),
			nodes:  []*plugintest.NodeWrapper{plugintest.MakeNode().Image(600*mb, "a:1")},
			// 100*(1200-23)/(2000-23) = 59
			want: []int64{59},
		},
		{
			name:   "spread scales the size",
			handle: &plugintest.Handle{NodeCount: 4, Images: map[string]int{"a:latest": 2}},
			pod:    plugintest.MakePod().Container("a"),
			nodes:  []*plugintest.NodeWrapper{plugintest.MakeNode().Image(100*mb, "a:latest", "a@sha256:1")},
			// 100MB * 2/4 = 50MB; 100*(50-23)/(1000-23) = 2
			want: []int64{2},
		},
		{
			name:    "image volumes count as images, for the sum and the threshold",
			handle:  &plugintest.Handle{NodeCount: 1, Images: map[string]int{"model:v2": 1}},
			pod:     plugintest.MakePod().Container("b:1"),
			volumes: []string{"model:v2", "data"},
			nodes:   []*plugintest.NodeWrapper{plugintest.MakeNode().Image(900*mb, "model:v2")},
			// 900MB on the node; 3 images: 100*(900-23)/(3000-23) = 29
			want: []int64{29},
		},
		{
			name:   "found by digest",
			handle: &plugintest.Handle{NodeCount: 1, Images: map[string]int{"a@sha256:1": 1}},
			pod:    plugintest.MakePod().Container("a@sha256:1"),
			nodes:  []*plugintest.NodeWrapper{plugintest.MakeNode().Image(1000*mb, "a:latest", "a@sha256:1")},
			want:   []int64{100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(nil, tt.handle)
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*ImageLocality)
			pod := tt.pod.Obj()
			pod.ImageVolumes = tt.volumes
			for _, withPreScore := range []bool{true, false} {
				state := &plugin.CycleState{}
				if withPreScore {
					if st := pl.PreScore(state, pod, nil); !st.IsSuccess() {
						t.Fatal(st.Message())
					}
				}
				var got []int64
				for _, n := range tt.nodes {
					s, st := pl.Score(state, pod, n.Obj())
					if !st.IsSuccess() {
						t.Fatal(st.Message())
					}
					got = append(got, s)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("PreScore=%v: scores = %v, want %v", withPreScore, got, tt.want)
				}
			}
		})
	}
}

func TestScoreAllocs(t *testing.T) {
	h := &plugintest.Handle{NodeCount: 3, Images: map[string]int{"a:1": 2}}
	p, _ := New(nil, h)
	pl := p.(*ImageLocality)
	pod := plugintest.MakePod().Container("a:1").Obj()
	node := plugintest.MakeNode().Image(300*mb, "x:1").Image(300*mb, "a:1").Obj()
	state := &plugin.CycleState{}
	pl.PreScore(state, pod, nil)
	var s int64
	if n := testing.AllocsPerRun(100, func() { s, _ = pl.Score(state, pod, node) }); n != 0 {
		t.Errorf("Score allocates %v times", n)
	}
	// Without PreScore the first node resolves the images and the cycle's
	// other nodes reuse them.
	fresh := &plugin.CycleState{}
	if n := testing.AllocsPerRun(100, func() { s, _ = pl.Score(fresh, pod, node) }); n != 0 {
		t.Errorf("Score without PreScore allocates %v times", n)
	}
	_ = s
}

func BenchmarkScore(b *testing.B) {
	h := &plugintest.Handle{NodeCount: 100, Images: map[string]int{"registry.k8s.io/app:v1": 40, "sidecar:1": 90}}
	p, _ := New(nil, h)
	pl := p.(*ImageLocality)
	pod := plugintest.MakePod().Container("registry.k8s.io/app:v1").Container("sidecar:1").Obj()
	n := plugintest.MakeNode()
	for _, img := range []string{"a:1", "b:1", "c:1", "d:1", "e:1", "f:1", "g:1", "h:1", "sidecar:1", "registry.k8s.io/app:v1"} {
		n.Image(100*mb, img, img+"@sha256:0123456789abcdef")
	}
	node := n.Obj()
	state := &plugin.CycleState{}
	pl.PreScore(state, pod, nil)
	b.ReportAllocs()
	for b.Loop() {
		pl.Score(state, pod, node)
	}
}
