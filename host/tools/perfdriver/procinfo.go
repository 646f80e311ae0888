package perfdriver

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every
// Linux architecture the project builds for.
const userHZ = 100

// procFileLimit bounds a /proc file read (a stat or status file is a few
// KiB; /proc/stat grows with the CPUs, a few hundred bytes each).
const procFileLimit = 1 << 20

// procRoot is where the process information is read (tests point it
// elsewhere).
var procRoot = "/proc"

// processStart returns when process pid started, from its starttime in
// /proc/<pid>/stat (clock ticks after boot) and the boot time in
// /proc/stat. Only the same machine's processes can be read.
func processStart(pid int) (time.Time, error) {
	f, err := statFields(pid)
	if err != nil {
		return time.Time{}, err
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

// cpuSeconds returns the CPU time process pid has used so far, user and
// system (utime + stime, fields 14 and 15 of /proc/<pid>/stat), summed
// over all its threads; the time of children it waited for is not in it.
func cpuSeconds(pid int) (float64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, i := range []int{11, 12} { // fields 14 and 15
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("scheduler pid %d: stat field %d %q: %w", pid, i+3, f[i], err)
		}
		ticks += n
	}
	return float64(ticks) / userHZ, nil
}

// statFields returns the fields of /proc/<pid>/stat from the third
// (state) on: f[i] is field i+3.
func statFields(pid int) ([]string, error) {
	b, err := boundedread.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid), procFileLimit, boundedread.Regular, "process stat")
	if err != nil {
		return nil, fmt.Errorf("scheduler pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing one.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("scheduler pid %d: unreadable stat %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("scheduler pid %d: stat has %d fields", pid, len(f)+2)
	}
	return f, nil
}

func bootTime() (time.Time, error) {
	f, err := boundedread.Open(procRoot+"/stat", procFileLimit, boundedread.Regular, "kernel stat")
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
	f, err := boundedread.Open(fmt.Sprintf("%s/%d/status", procRoot, pid), procFileLimit, boundedread.Regular, "process status")
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
