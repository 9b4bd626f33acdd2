package gossipnode

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

func TestFileTracerKeepsEveryEventAndToleratesLateOnes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.ndjson")
	tr, err := NewFileTracer(path, false, DefaultTraceBuffer)
	if err != nil {
		t.Fatal(err)
	}
	deliver := pb.TraceEvent_DELIVER_MESSAGE
	send := pb.TraceEvent_SEND_RPC
	for range 1000 {
		tr.Trace(&pb.TraceEvent{Type: &deliver})
		tr.Trace(&pb.TraceEvent{Type: &send}) // filtered out without trace_rpc
	}
	tr.Close()
	tr.Trace(&pb.TraceEvent{Type: &deliver}) // pubsub traces while shutting down: no panic
	tr.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		lines++
	}
	if lines != 1000 || tr.Events() != 1000 {
		t.Fatalf("%d lines, %d events counted, want the 1000 DELIVER events", lines, tr.Events())
	}
}
