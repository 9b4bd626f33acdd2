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

// The version a node is configured with is the one its streams speak: each node offers
// that version and the older ones, so two nodes settle on the lower of their versions.
func TestNodesNegotiateTheConfiguredGossipsubVersion(t *testing.T) {
	cases := map[[2]string]string{
		{"1.3", "1.3"}: "/meshsub/1.3.0",
		{"1.2", "1.3"}: "/meshsub/1.2.0",
		{"1.2", "1.2"}: "/meshsub/1.2.0",
		{"1.1", "1.2"}: "/meshsub/1.1.0",
		{"1.0", "1.1"}: "/meshsub/1.0.0",
	}
	for versions, want := range cases {
		cfg := testRun(2, []edge{{0, 1}}, 0, 10*time.Millisecond, ns(2*time.Second))
		cfg.Nodes[0].Version, cfg.Nodes[1].Version = versions[0], versions[1]
		out := t.TempDir()
		if _, err := runConfig(t, cfg, out, &progress{w: io.Discard}); err != nil {
			t.Fatal(err)
		}
		for node := range 2 {
			if got := outboundProtocol(t, out, node); got != want {
				t.Errorf("versions %v: node %d opened %q, want %q", versions, node, got, want)
			}
		}
	}
}

// outboundProtocol is the protocol of the first stream node i opened to its peer.
func outboundProtocol(t *testing.T, out string, i int) string {
	t.Helper()
	f, err := os.Open(filepath.Join(out, fmt.Sprintf("node-%d", i), gossipnode.TraceFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var e struct {
			Stream *struct {
				Proto string `json:"proto"`
			} `json:"onNewOutboundStream"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Stream != nil {
			return e.Stream.Proto
		}
	}
	return ""
}
