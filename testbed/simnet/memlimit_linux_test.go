//go:build linux

package simnet

import (
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
)

func TestMemoryLimitLeavesAMarginOfTheAvailableMemory(t *testing.T) {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		t.Skip("no sysinfo: ", err)
	}
	total := int64(info.Totalram) * int64(info.Unit)
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	t.Setenv("GOMEMLIMIT", "")
	limit := setMemoryLimit()
	// The kernel's own count of the machine's memory bounds what can be available.
	if limit <= 0 || limit >= total {
		t.Fatalf("limit %d: want within (0, %d)", limit, total)
	}
	// Available memory moves while the test runs: compare within 256 MiB.
	avail := memAvailable()
	want := max(avail-1<<30, avail*9/10)
	if d := limit - want; d > 256<<20 || d < -256<<20 {
		t.Fatalf("limit %d, want max(available − 1 GiB, 90 %% of available) = %d", limit, want)
	}
}

func TestGCWatchKeepsThePeakLiveHeap(t *testing.T) {
	var w gcWatch
	held := make([][]byte, 64)
	for i := range held {
		held[i] = make([]byte, 1<<20)
		held[i][0] = 1
	}
	runtime.GC()
	live, _ := w.sample()
	if live < 64<<20 {
		t.Fatalf("live heap %d with 64 MiB held", live)
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	runtime.GC()
	if now, _ := w.sample(); now >= live || w.peak() < 64<<20 {
		t.Fatalf("after release: live %d (was %d), peak %d", now, live, w.peak())
	}
}
