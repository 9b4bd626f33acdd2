package simnet

import (
	"encoding/json"
	"io"
	"math"
	"runtime/metrics"
	"sync"
	"time"
)

// progressEvery is how often, in virtual time, the runner looks at the wall clock to
// decide whether to report progress: often enough for a smooth bar, rare enough to
// cost nothing next to the nodes' own timers.
const progressEvery = 50 * time.Millisecond

// progressWall is the least wall time between two progress lines.
const progressWall = 1.0

// progress writes the runner's JSON lines on stdout (INTERFACE.md, "Progress").
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progress) emit(fields map[string]any) {
	line, _ := json.Marshal(fields)
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.w.Write(append(line, '\n'))
}

func (p *progress) phase(name string) { p.emit(map[string]any{"event": "phase", "name": name}) }

func (p *progress) warn(text string) { p.emit(map[string]any{"event": "warning", "text": text}) }

// reportProgress writes where virtual time is, about once a wall second.
func (r *runner) reportProgress() {
	last := r.wall()
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-r.ctx.Done():
			return
		}
		if now := r.wall(); now-last >= progressWall {
			last = now
			live, _ := r.gc.sample()
			r.progress.emit(map[string]any{
				"event": "progress", "virtual_ns": time.Since(r.start).Nanoseconds(), "end_ns": r.cfg.EndNs,
				"wall_s": math.Round(now*10) / 10, "memory_bytes": goMemory(), "live_heap_bytes": live,
				"events": r.traceEvents(),
			})
		}
	}
}

// goMemory is the memory the Go runtime holds from the OS, less what it has returned:
// close to the resident size, and readable on every platform.
func goMemory() uint64 {
	samples := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	return samples[0].Value.Uint64() - samples[1].Value.Uint64()
}

// traceEvents is every node's trace events so far.
func (r *runner) traceEvents() uint64 {
	var total uint64
	for _, n := range r.nodes {
		total += n.Events.Events()
	}
	return total
}
