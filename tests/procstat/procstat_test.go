package procstat

import (
	"os"
	"testing"
	"time"
)

// TestCPUTime: the CPU time of this process grows while it spins, by no
// more than the wall time passed (one goroutine spins; the runtime's own
// threads add little), and a process that does not exist is an error.
func TestCPUTime(t *testing.T) {
	pid := os.Getpid()
	before, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var grown time.Duration
	// On a loaded machine the spin gets a share of a core only: spin
	// until it had 100ms, or give up after 30s.
	for grown < 100*time.Millisecond {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("CPU time grew by %v in 30s of spinning", grown)
		}
		for s := time.Now(); time.Since(s) < 10*time.Millisecond; {
		}
		now, err := CPUTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		grown = now - before
	}
	if wall := time.Since(start); grown > 2*wall+50*time.Millisecond {
		t.Errorf("CPU time grew by %v in %v of wall time", grown, wall)
	}
	if _, err := CPUTime(1 << 30); err == nil {
		t.Error("CPUTime of a process that does not exist: no error")
	}
}
