package simnet

import (
	"bufio"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// The collector's memory limit when GOMEMLIMIT is unset: all the memory available at
// start but memoryMargin, or memoryShare of it where that is more (small machines). Go's
// collector otherwise lets the heap grow to twice what is live (GOGC=100): at a
// thousand nodes with sixteen messages in flight, twice the live set (15.3 GiB) is more
// than a 24 GiB machine has while the live set itself fits. With a limit the collector
// collects more often as the limit nears instead; the closer the limit sits to the
// live set, the more often (bench/RESULTS.md: a heap goal 1.2-1.7 GiB above the live
// set kept the collector at 7-8 % of the CPU).
const (
	memoryMargin = 1 << 30
	memoryShare  = 0.9
)

// setMemoryLimit sets the collector's memory limit from the memory available now,
// unless GOMEMLIMIT says otherwise; it returns the limit in force (0 when there is
// none, as on systems without /proc/meminfo).
func setMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") == "" {
		if avail := memAvailable(); avail > 0 {
			debug.SetMemoryLimit(max(avail-memoryMargin, int64(float64(avail)*memoryShare)))
		}
	}
	limit := debug.SetMemoryLimit(-1) // -1 reads the limit without changing it
	if limit == 1<<63-1 {
		return 0
	}
	return limit
}

// memAvailable is Linux's estimate of the memory that can be used without swapping
// (MemAvailable in /proc/meminfo), in bytes; 0 where it cannot be read.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		fields := strings.Fields(scan.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}

// gcWatch follows the collector across a run: the largest live heap any cycle found
// (what a run needs at least, whatever the collector's settings) and its share of the
// CPU time.
type gcWatch struct {
	mu       sync.Mutex
	peakLive uint64
}

var gcSamples = []string{
	"/gc/heap/live:bytes",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/user:cpu-seconds",
	"/cpu/classes/scavenge/total:cpu-seconds",
}

// sample reads the live heap after the last cycle, keeps the peak and returns it with
// the collector's share of the CPU time used so far. Marking on otherwise idle cores
// is left out of both: it takes no time from the nodes.
func (g *gcWatch) sample() (live uint64, gcShare float64) {
	s := make([]metrics.Sample, len(gcSamples))
	for i, name := range gcSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	live = s[0].Value.Uint64()
	gc := s[1].Value.Float64() - s[2].Value.Float64()
	if used := gc + s[3].Value.Float64() + s[4].Value.Float64(); used > 0 {
		gcShare = gc / used
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peakLive = max(g.peakLive, live)
	return live, gcShare
}

func (g *gcWatch) peak() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peakLive
}
