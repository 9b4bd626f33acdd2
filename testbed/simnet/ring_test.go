package simnet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

// traceEvent is the part of a trace line these tests read.
type traceEvent struct {
	Type      int   `json:"type"`
	Timestamp int64 `json:"timestamp"`
}

const deliverMessage = 3 // pb.TraceEvent_DELIVER_MESSAGE

// deliveries is every DELIVER_MESSAGE time of node i's trace.
func deliveries(t *testing.T, out string, i int) []int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(out, fmt.Sprintf("node-%d", i), gossipnode.TraceFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var times []int64
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var e traceEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if e.Type == deliverMessage {
			times = append(times, e.Timestamp)
		}
	}
	return times
}

// A 20-node ring with chords: every other node delivers the one message exactly once,
// after it was published and no sooner than one hop's latency.
func TestRingDeliversToEveryNodeOnce(t *testing.T) {
	const n = 20
	var edges []edge
	for i := range n {
		edges = append(edges, edge{i, (i + 1) % n}, edge{i, (i + 5) % n})
	}
	publishAt := 5 * time.Second
	latency := 25 * time.Millisecond
	cfg := testRun(n, edges, 50_000_000, latency, int64(8*time.Second))
	cfg.DialStaggerNs = int64(time.Millisecond)
	cfg.Nodes[0].Schedule = []gossipnode.Publication{{Msg: 0, TNs: int64(publishAt), Size: 128 << 10}}
	out := t.TempDir()
	if _, err := runConfig(t, cfg, out, &progress{w: io.Discard}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		times := deliveries(t, out, i)
		if len(times) != 1 {
			t.Fatalf("node %d delivered %d times, want once", i, len(times))
		}
		if times[0] < int64(publishAt+latency) {
			t.Fatalf("node %d delivered at %d ns, before publish + one latency", i, times[0])
		}
	}
}
