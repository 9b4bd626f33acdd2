package simnet

import (
	"maps"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

// pinnedVersions are the module versions go.mod pins (TestPinnedVersionsMatchGoMod
// keeps them true): a test binary carries no module list to read them from.
var pinnedVersions = map[string]string{
	"github.com/libp2p/go-libp2p":        "v0.51.0",
	"github.com/libp2p/go-libp2p-pubsub": "v0.17.0",
	"github.com/marcopolo/simnet":        "v0.0.7",
	"github.com/quic-go/quic-go":         "v0.64.1",
}

// bufferPool is what go.mod puts in go-buffer-pool's place: our own pool with finer
// size classes (bufpool/pool.go), recorded so that a run says what it linked.
const bufferPoolModule, bufferPool = "github.com/libp2p/go-buffer-pool", "testbed/bufpool"

// versions is Go's version and the pinned modules', for simnet.json and node.json.
func versions() map[string]string {
	v := gossipnode.BuildVersions()
	maps.Copy(v, pinnedVersions)
	v[bufferPoolModule] = bufferPool
	return v
}
