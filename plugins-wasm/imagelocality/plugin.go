// Package imagelocality is kube-scheduler's ImageLocality plugin as a
// wasmsched policy: it favours nodes that already hold the pod's container
// images, weighing each image by its size and by how widely it has spread
// (to avoid piling pods onto the few nodes that pulled an image first).
package imagelocality

import (
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's so
// existing configurations carry over.
const Name = "ImageLocality"

// Score thresholds, upstream's: image sums below MinThreshold score 0 and
// above MaxContainerThreshold per container score MaxScore; the range
// covers the sizes of most registry images.
const (
	mb int64 = 1024 * 1024
	// MinThreshold is the image sum that scores 0: below it an image
	// saves too little pull time to matter.
	MinThreshold = 23 * mb
	// MaxContainerThreshold, times the number of containers, is the sum
	// that scores MaxScore.
	MaxContainerThreshold = 1000 * mb
)

var preScoreKey = plugin.NewStateKey()

// ImageLocality scores nodes by the images of the pod they already have.
type ImageLocality struct {
	handle plugin.Handle
}

var (
	_ plugin.PreScorePlugin = (*ImageLocality)(nil)
	_ plugin.ScorePlugin    = (*ImageLocality)(nil)
)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin; it takes no args, as upstream. It keeps h for the
// cluster-wide image spread.
func New(_ *abi.Value, h plugin.Handle) (plugin.Plugin, error) { return &ImageLocality{handle: h}, nil }

// Name implements plugin.Plugin.
func (*ImageLocality) Name() string { return Name }

// wantedImage is one container image of the pod with its cluster spread.
type wantedImage struct {
	name   string // normalised
	id     abi.StrID
	spread float64 // nodes holding it / all nodes
}

// preScoreState is the pod's images, immutable, so Clone shares it.
type preScoreState struct {
	images []wantedImage
	// containers counts init and app containers and image volumes: it
	// scales the top threshold.
	containers int
}

// Clone implements plugin.StateData.
func (s *preScoreState) Clone() plugin.StateData { return s }

func (pl *ImageLocality) newState(pod *abi.Pod) *preScoreState {
	// Image volumes count as images, each one more for the threshold,
	// as kube-scheduler v1.37 counts them.
	s := &preScoreState{containers: len(pod.InitContainers) + len(pod.Containers) + len(pod.ImageVolumes)}
	for i := range pod.InitContainers {
		s.images = pl.appendWanted(s.images, pod.InitContainers[i].Image)
	}
	for i := range pod.Containers {
		s.images = pl.appendWanted(s.images, pod.Containers[i].Image)
	}
	for _, ref := range pod.ImageVolumes {
		s.images = pl.appendWanted(s.images, ref)
	}
	return s
}

// appendWanted adds image if some node holds it.
func (pl *ImageLocality) appendWanted(dst []wantedImage, image string) []wantedImage {
	total := float64(pl.handle.NumNodes())
	name := normalizedImageName(image)
	held := pl.handle.ImageNumNodes(name)
	if held == 0 || total == 0 {
		return dst // on no node: it would add 0 everywhere
	}
	return append(dst, wantedImage{name: name, id: pl.handle.StringID(name), spread: float64(held) / total})
}

// PreScore resolves the pod's image names and their spread once per cycle
// (upstream does it per node; the result is the same).
func (pl *ImageLocality) PreScore(state *plugin.CycleState, pod *abi.Pod, _ []*plugin.NodeInfo) *plugin.Status {
	state.Write(preScoreKey, pl.newState(pod))
	return nil
}

// Score sums size*spread over the pod's images present on the node (an
// image used by two containers counts twice, as upstream) and maps the sum
// onto [0, MaxScore] between the thresholds.
func (pl *ImageLocality) Score(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	s, ok := state.Read(preScoreKey).(*preScoreState)
	if !ok {
		// PreScore did not run: resolve the images once and keep them
		// for the cycle's other nodes.
		s = pl.newState(pod)
		state.Write(preScoreKey, s)
	}
	var sum int64
	for i := range s.images {
		if size := imageSize(&node.Node, &s.images[i]); size != 0 {
			sum += int64(float64(size) * s.images[i].spread)
		}
	}
	return calculatePriority(sum, s.containers), nil
}

// imageSize is the size of the node's image known by w's name, 0 when the
// node has none (which adds what a size of 0 would: nothing). It runs per
// node and wanted image, so it takes two pointers (in a Wasm guest every
// parameter past the first few goes on the stack) and compares numbers in
// a loop of its own when the name and the node's image names are
// numbered, as a mirrored node's are; abi.AnyString answers the rest, as
// it would have for every image.
func imageSize(node *abi.Node, w *wantedImage) int64 {
	images := node.Images
	id := w.id
	numbered := id != 0 && id != abi.StrAbsent
	for i := range images {
		im := &images[i]
		if numbered && len(im.NameIDs) >= len(im.Names) {
			for j, nid := range im.NameIDs[:len(im.Names)] {
				if nid == id || (nid == 0 && im.Names[j] == w.name) {
					return im.Size
				}
			}
			continue
		}
		if abi.AnyString(im.Names, im.NameIDs, w.name, id) {
			return im.Size
		}
	}
	return 0
}

// calculatePriority clamps sum into [MinThreshold, maxThreshold] and
// scales it linearly onto [0, MaxScore].
func calculatePriority(sum int64, containers int) int64 {
	maxThreshold := MaxContainerThreshold * int64(containers)
	if sum < MinThreshold {
		sum = MinThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	return abi.MaxScore * (sum - MinThreshold) / (maxThreshold - MinThreshold)
}

// normalizedImageName adds the implicit ":latest" tag to an image with no
// tag (no ':' after the last '/'); digests ("@sha256:...") already have one.
func normalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		return name + ":latest"
	}
	return name
}
