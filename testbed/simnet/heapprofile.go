package simnet

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// Where memory goes is decided mid-run (the end has closed every host), so heap
// profiles can be taken at chosen virtual times: GOSSIPLAB_SIMNET_HEAP_AT_NS=<ns since
// the start>[,<ns>...] and GOSSIPLAB_SIMNET_HEAP_FILE=<path>; with several times, the
// profile at t ns goes to <path>.<t>.
const (
	heapAtEnv   = "GOSSIPLAB_SIMNET_HEAP_AT_NS"
	heapFileEnv = "GOSSIPLAB_SIMNET_HEAP_FILE"
)

// heapProfile writes the heap profiles at the virtual times the environment names.
func (r *runner) heapProfile() {
	path := os.Getenv(heapFileEnv)
	times := strings.Split(os.Getenv(heapAtEnv), ",")
	for _, field := range times {
		at, err := strconv.ParseInt(strings.TrimSpace(field), 10, 64)
		if err != nil || path == "" || !r.sleepUntil(at) {
			return
		}
		file := path
		if len(times) > 1 {
			file = fmt.Sprintf("%s.%d", path, at)
		}
		r.writeHeapProfile(file)
	}
}

func (r *runner) writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		r.progress.warn("heap profile: " + err.Error())
		return
	}
	defer f.Close()
	runtime.GC()
	_ = pprof.WriteHeapProfile(f)
	if g, err := os.Create(path + ".goroutines"); err == nil {
		_ = pprof.Lookup("goroutine").WriteTo(g, 1)
		_ = g.Close()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	r.progress.emit(map[string]any{
		"event": "memory", "virtual_ns": time.Since(r.start).Nanoseconds(), "heap_alloc": m.HeapAlloc,
		"heap_inuse": m.HeapInuse, "stack_inuse": m.StackInuse, "sys": m.Sys,
		"goroutines": runtime.NumGoroutine(),
	})
}
