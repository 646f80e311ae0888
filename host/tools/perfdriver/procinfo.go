package perfdriver

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every
// Linux architecture the project builds for.
const userHZ = 100

// procRoot is where the process information is read (tests point it
// elsewhere).
var procRoot = "/proc"

// processStart returns when process pid started, from its starttime in
// /proc/<pid>/stat (clock ticks after boot) and the boot time in
// /proc/stat. Only the same machine's processes can be read.
func processStart(pid int) (time.Time, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduler pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing one.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("scheduler pid %d: unreadable stat %q", pid, s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return time.Time{}, fmt.Errorf("scheduler pid %d: stat has %d fields", pid, len(f)+2)
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // field 22
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduler pid %d: starttime %q: %w", pid, f[19], err)
	}
	boot, err := bootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * time.Second / userHZ), nil
}

func bootTime() (time.Time, error) {
	f, err := os.Open(procRoot + "/stat")
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time %q: %w", rest, err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("boot time: no btime in %s/stat", procRoot)
}

// peakRSS returns process pid's peak resident set (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("%s/%d/status", procRoot, pid))
	if err != nil {
		return 0, fmt.Errorf("scheduler pid %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("scheduler pid %d: VmHWM %q: %w", pid, rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("scheduler pid %d: no VmHWM in its status", pid)
}
