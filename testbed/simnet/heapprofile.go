package simnet

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
)

// Where memory goes is decided mid-run (the end has closed every host), so a heap
// profile can be taken at a chosen virtual time: GOSSIPLAB_SIMNET_HEAP_AT_NS=<ns since
// the start> and GOSSIPLAB_SIMNET_HEAP_FILE=<path>.
const (
	heapAtEnv   = "GOSSIPLAB_SIMNET_HEAP_AT_NS"
	heapFileEnv = "GOSSIPLAB_SIMNET_HEAP_FILE"
)

// heapProfile writes the heap profile at the virtual time the environment names.
func (r *runner) heapProfile() {
	at, err := strconv.ParseInt(os.Getenv(heapAtEnv), 10, 64)
	path := os.Getenv(heapFileEnv)
	if err != nil || path == "" || !r.sleepUntil(at) {
		return
	}
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
		"event": "memory", "heap_inuse": m.HeapInuse, "stack_inuse": m.StackInuse,
		"sys": m.Sys, "goroutines": runtime.NumGoroutine(),
	})
}
