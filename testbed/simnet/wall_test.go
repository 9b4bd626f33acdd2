package simnet

import "testing"

// A goroutine computing for a stretch of real time uses about that much CPU time (user
// time: the work is arithmetic, reading the clock only every million steps): at least
// some of it however loaded the machine, and no more than every core's worth.
func TestCPUSecondsCountsTheProcessesWork(t *testing.T) {
	before, began := cpuSeconds(), wallSeconds()
	sum := 0
	for wallSeconds()-began < 0.3 {
		for i := range 1_000_000 {
			sum += i * i
		}
	}
	used, elapsed := cpuSeconds()-before, wallSeconds()-began
	if used < 0.05 || used > elapsed*4+0.05 {
		t.Errorf("computing for %.2f s of wall time (sum %d) used %.3f s of CPU", elapsed, sum, used)
	}
}
