package simnet

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// wallSeconds reads the real monotonic clock. Inside a synctest bubble time.Now is
// virtual, so the real clock is read with a system call.
func wallSeconds() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// cpuSeconds is the CPU time the process has used so far, user and system, in
// seconds: on a shared machine a steadier measure of a run's cost than its wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// peakRSS is the process's peak resident memory in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss // bytes on macOS
	}
	return ru.Maxrss * 1024 // KiB on Linux
}
