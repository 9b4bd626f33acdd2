//go:build linux

package simnet

import (
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
)

func TestMemoryLimitIsAShareOfTheAvailableMemory(t *testing.T) {
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
	if limit <= 0 || limit > int64(float64(total)*memoryShare) {
		t.Fatalf("limit %d: want within (0, %.1f × %d]", limit, memoryShare, total)
	}
	after := memAvailable()
	if float64(limit) < 0.5*float64(after)*memoryShare || float64(limit) > 2*float64(after)*memoryShare {
		t.Fatalf("limit %d is not about %.1f × the %d bytes available", limit, memoryShare, after)
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
