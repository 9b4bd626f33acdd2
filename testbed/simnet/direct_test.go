package simnet

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

// Direct peers find each other at their simulated addresses: on a line 0-1-2 where 0
// and 2 are direct peers (no topology edge), 2 gets 0's message from 0 itself, one
// latency after the publish instead of two.
func TestDirectPeersConnectAndForwardAcrossTheLine(t *testing.T) {
	latency := 10 * time.Millisecond
	cfg := testRun(3, []edge{{0, 1}, {1, 2}}, 0, latency, ns(8*time.Second))
	cfg.Nodes[0].Direct = []gossipnode.PeerConfig{{Index: 2}}
	cfg.Nodes[2].Direct = []gossipnode.PeerConfig{{Index: 0}}
	cfg.Nodes[0].Schedule = []gossipnode.Publication{{Msg: 0, TNs: ns(5 * time.Second), Size: 1000}}
	out := t.TempDir()
	if _, err := runConfig(t, cfg, out, &progress{w: io.Discard}); err != nil {
		t.Fatal(err)
	}
	_, publisher, _ := gossipnode.NodeKey(cfg.Seed, 0)
	f, err := os.Open(filepath.Join(out, "node-2", gossipnode.TraceFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var e struct {
			Type      int   `json:"type"`
			Timestamp int64 `json:"timestamp"`
			Deliver   struct {
				ReceivedFrom string `json:"receivedFrom"`
			} `json:"deliverMessage"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != deliverMessage {
			continue
		}
		from, _ := base64.StdEncoding.DecodeString(e.Deliver.ReceivedFrom)
		if string(from) != string(publisher) || e.Timestamp >= ns(5*time.Second+2*latency) {
			t.Fatalf("node 2 delivered at %d ns from %x, want from node 0 within one latency", e.Timestamp, from)
		}
		return
	}
	t.Fatal("node 2 never delivered the message")
}
