package main

import (
	"crypto/ed25519"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"
)

// The speed gauge prints, once a second, how fast the CPU it runs on is at that moment
// for two kinds of work, timed in the gauge thread's own CPU time (so time the CPU gives
// other threads is not counted):
//
//	<unix ms> <ns per dependent load over 64 MiB> <µs per ed25519 verification>
//
// The loads measure the memory system (caches and DRAM, shared with whatever else runs
// on the machine), the median of ten runs: another busy thread on the same CPU does not
// change it, only the machine does. The verification measures the core's arithmetic as
// the gauge gets it, the fastest of ten: another busy thread on the same CPU slows it
// too (16-40 % beside a spinning process), through the core's own caches and
// predictors. It uses about 3 % of a CPU.

const (
	gaugeChainWords  = 1 << 23 // 64 MiB of uint64: far beyond the caches
	gaugeLoadsPerRun = 20_000
	gaugeRunsPerTick = 10
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

type speedGauge struct {
	chain  []uint64
	at     uint64
	public ed25519.PublicKey
	msg    []byte
	sig    []byte
}

func newSpeedGauge() *speedGauge {
	public, private, _ := ed25519.GenerateKey(nil)
	msg := make([]byte, 1000)
	return &speedGauge{chain: randomCycle(gaugeChainWords), public: public, msg: msg, sig: ed25519.Sign(private, msg)}
}

func (g *speedGauge) loadNs() float64 {
	start := threadCPU()
	for range gaugeLoadsPerRun {
		g.at = g.chain[g.at]
	}
	return float64((threadCPU() - start).Nanoseconds()) / gaugeLoadsPerRun
}

func (g *speedGauge) verifyUs() float64 {
	start := threadCPU()
	if !ed25519.Verify(g.public, g.msg, g.sig) {
		panic("ed25519: the gauge's own signature does not verify")
	}
	return float64((threadCPU() - start).Nanoseconds()) / 1000
}

func medianOf(values []float64) float64 {
	slices.Sort(values)
	return values[len(values)/2]
}

// runSpeedGauge prints a reading a second for `seconds` (until killed if 0).
func runSpeedGauge(seconds int) {
	// Die with the orchestrator, like the nodes, even if it is SIGKILLed: the gauge runs
	// in no namespace of the run, so `gossiplab clean` would not find it.
	dieWithOrchestrator()
	runtime.LockOSThread()
	g := newSpeedGauge()
	loads, verifies := make([]float64, gaugeRunsPerTick), make([]float64, gaugeRunsPerTick)
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	for tick := time.Now(); seconds == 0 || tick.Before(end); tick = tick.Add(time.Second) {
		for i := range gaugeRunsPerTick {
			loads[i], verifies[i] = g.loadNs(), g.verifyUs()
		}
		fmt.Printf("%d %.1f %.2f\n", tick.UnixMilli(), medianOf(loads), slices.Min(verifies))
		time.Sleep(time.Until(tick.Add(time.Second)))
	}
}
