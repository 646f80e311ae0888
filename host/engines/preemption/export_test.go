package preemption

// SetDebugBatch lets tests see which dry-run path a chunk takes.
func SetDebugBatch(f func(batched bool)) { debugBatch = f }
