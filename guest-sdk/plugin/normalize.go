package plugin

// DefaultNormalizeScore scales scores so the highest becomes maxPriority,
// and with reverse flips them (maxPriority - score), as kube-scheduler's
// helper of the same name. All-zero scores become maxPriority when
// reversed, else stay 0.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []int64) {
	var top int64
	for _, s := range scores {
		top = max(top, s)
	}
	if top == 0 {
		if reverse {
			for i := range scores {
				scores[i] = maxPriority
			}
		}
		return
	}
	for i, s := range scores {
		s = maxPriority * s / top
		if reverse {
			s = maxPriority - s
		}
		scores[i] = s
	}
}
