package simnet

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

// RunConfig is RUN.json, written by the Python backend: every node's testbed config,
// the network and the faults, all times in ns since the run's start (INTERFACE.md).
type RunConfig struct {
	Seed          uint64               `json:"seed"`
	EndNs         int64                `json:"end_ns"`
	Nodes         []*gossipnode.Config `json:"nodes"`
	Network       NetworkConfig        `json:"network"`
	DialStaggerNs int64                `json:"dial_stagger_ns"`
	Faults        []Fault              `json:"faults"`
	// Link is the packet network: "lean" (gossiplab's, the default) or "simnet"
	// (github.com/marcopolo/simnet's links and router).
	Link string `json:"link"`
}

// NetworkConfig is every node's access link and the latency between nodes.
type NetworkConfig struct {
	UploadBps   []int64       `json:"upload_bps"`
	DownloadBps []int64       `json:"download_bps"`
	Latency     LatencyConfig `json:"latency"`
	Loss        []float64     `json:"loss"`
}

// LatencyConfig gives a packet from a to b the one-way latency
// matrix_ns[region[a]][region[b]] + added_ns[a] + added_ns[b] (kind "matrix") or
// ns + added_ns[a] + added_ns[b] (kind "constant").
type LatencyConfig struct {
	Kind     string    `json:"kind"`
	Region   []int     `json:"region"`
	MatrixNs [][]int64 `json:"matrix_ns"`
	Ns       int64     `json:"ns"`
	AddedNs  []int64   `json:"added_ns"`
}

// Fault is one crash, partition or topic leave.
type Fault struct {
	Kind      string  `json:"kind"` // crash | partition | leave
	Node      int     `json:"node"`
	AtNs      int64   `json:"at_ns"`
	RestartNs *int64  `json:"restart_ns"`
	Groups    [][]int `json:"groups"`
	FromNs    int64   `json:"from_ns"`
	UntilNs   *int64  `json:"until_ns"`
	Topic     int     `json:"topic"`
	RejoinNs  *int64  `json:"rejoin_ns"`
}

// ReadRunConfig reads and checks RUN.json; every error names the field.
func ReadRunConfig(path string) (*RunConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c RunConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

func (c *RunConfig) check() error {
	n := len(c.Nodes)
	if c.Link != "" && c.Link != "lean" && c.Link != "simnet" {
		return fmt.Errorf("link %q is not lean or simnet", c.Link)
	}
	if n == 0 {
		return fmt.Errorf("nodes is empty")
	}
	net := c.Network
	for name, length := range map[string]int{
		"network.upload_bps": len(net.UploadBps), "network.download_bps": len(net.DownloadBps),
		"network.latency.added_ns": len(net.Latency.AddedNs),
	} {
		if length != n {
			return fmt.Errorf("%s has %d entries for %d nodes", name, length, n)
		}
	}
	if net.Loss != nil && len(net.Loss) != n {
		return fmt.Errorf("network.loss has %d entries for %d nodes", len(net.Loss), n)
	}
	switch net.Latency.Kind {
	case "constant":
	case "matrix":
		if len(net.Latency.Region) != n {
			return fmt.Errorf("network.latency.region has %d entries for %d nodes", len(net.Latency.Region), n)
		}
		for i, r := range net.Latency.Region {
			if r < 0 || r >= len(net.Latency.MatrixNs) || len(net.Latency.MatrixNs[r]) != len(net.Latency.MatrixNs) {
				return fmt.Errorf("network.latency.region[%d] = %d has no row in a square matrix_ns", i, r)
			}
		}
	default:
		return fmt.Errorf("network.latency.kind %q is not matrix or constant", net.Latency.Kind)
	}
	for i, node := range c.Nodes {
		if node.Topics < 1 {
			return fmt.Errorf("nodes[%d].topics must be >= 1", i)
		}
		if node.Index != i {
			return fmt.Errorf("nodes[%d].index is %d", i, node.Index)
		}
		for _, p := range append(append([]gossipnode.PeerConfig{}, node.Peers...), node.Direct...) {
			if p.Index < 0 || p.Index >= n {
				return fmt.Errorf("nodes[%d] names peer %d, not a node", i, p.Index)
			}
		}
	}
	for i, f := range c.Faults {
		switch f.Kind {
		case "crash", "leave":
			if f.Node < 0 || f.Node >= n {
				return fmt.Errorf("faults[%d].node %d is not a node", i, f.Node)
			}
		case "partition":
			for _, g := range f.Groups {
				for _, node := range g {
					if node < 0 || node >= n {
						return fmt.Errorf("faults[%d].groups names %d, not a node", i, node)
					}
				}
			}
		default:
			return fmt.Errorf("faults[%d].kind %q is not crash, partition or leave", i, f.Kind)
		}
	}
	return nil
}
