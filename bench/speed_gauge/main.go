// speed_gauge prints, once a second, how fast this CPU is at this moment for two kinds of
// work, measured in the gauge thread's own CPU time (so sharing the CPU with other
// threads does not change the reading, only the machine's speed does):
//
//	<unix ms> <ns per dependent load over 64 MiB> <µs per ed25519 verification>
//
// The loads measure the memory system (caches and DRAM shared with whatever else runs
// on the machine), the verification the core's arithmetic. It uses about 3 % of a CPU.
package main

import (
	"crypto/ed25519"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"
)

const (
	chainWords  = 1 << 23 // 64 MiB of uint64: far beyond the caches
	loadsPerRun = 20_000
	runsPerTick = 10
)

// threadCPU is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// randomCycle links every word to the next one of a random permutation, so each load
// depends on the previous one and the prefetcher cannot guess it.
func randomCycle(words int) []uint64 {
	next := make([]uint64, words)
	order := rand.New(rand.NewSource(1)).Perm(words)
	for i, at := range order {
		next[at] = uint64(order[(i+1)%words])
	}
	return next
}

type gauge struct {
	chain  []uint64
	at     uint64
	public ed25519.PublicKey
	msg    []byte
	sig    []byte
}

func newGauge() *gauge {
	public, private, _ := ed25519.GenerateKey(nil)
	msg := make([]byte, 1000)
	return &gauge{chain: randomCycle(chainWords), public: public, msg: msg, sig: ed25519.Sign(private, msg)}
}

func (g *gauge) loadNs() float64 {
	start := threadCPU()
	for range loadsPerRun {
		g.at = g.chain[g.at]
	}
	return float64((threadCPU() - start).Nanoseconds()) / loadsPerRun
}

func (g *gauge) verifyUs() float64 {
	start := threadCPU()
	if !ed25519.Verify(g.public, g.msg, g.sig) {
		panic("ed25519: the gauge's own signature does not verify")
	}
	return float64((threadCPU() - start).Nanoseconds()) / 1000
}

func median(values []float64) float64 {
	slices.Sort(values)
	return values[len(values)/2]
}

func main() {
	seconds := flag.Int("seconds", 10, "how long to measure")
	flag.Parse()
	runtime.LockOSThread()
	g := newGauge()
	loads, verifies := make([]float64, runsPerTick), make([]float64, runsPerTick)
	end := time.Now().Add(time.Duration(*seconds) * time.Second)
	for tick := time.Now(); tick.Before(end); tick = tick.Add(time.Second) {
		for i := range runsPerTick {
			loads[i], verifies[i] = g.loadNs(), g.verifyUs()
		}
		fmt.Printf("%d %.1f %.2f\n", tick.UnixMilli(), median(loads), median(verifies))
		time.Sleep(time.Until(tick.Add(time.Second)))
	}
	if g.at == chainWords { // keeps the chase from being optimised away
		fmt.Fprintln(os.Stderr, "unreachable")
	}
}
