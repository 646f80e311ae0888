package perfdriver

import (
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// ReadReportFile reads a report file `perf -o json` wrote, for `perf
// compare`: a regular file (a FIFO a read would wait on for ever is
// refused) of at most config.MaxFileBytes, since the directory compared
// may hold anything.
func ReadReportFile(path string) ([]byte, error) {
	return boundedread.ReadFile(path, config.MaxFileBytes, boundedread.Regular, "perf report")
}
