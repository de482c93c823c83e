// Package procstat reads what the benchmark programs measure of the
// processes they start, from /proc.
package procstat

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
)

var vmHWM = regexp.MustCompile(`VmHWM:\s+(\d+) kB`)

// PeakRSS returns the high-water resident set (VmHWM) of process pid in
// bytes.
func PeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	m := vmHWM.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
	}
	kb, err := strconv.ParseInt(string(m[1]), 10, 64)
	return kb * 1024, err
}

// MiB writes n bytes in MiB with one decimal: "73.6 MiB".
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
