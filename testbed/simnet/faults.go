package simnet

import (
	"context"
	"fmt"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

// fault applies one fault at its time. Partitions need nothing here: the packet filter
// reads them (network.drops).
func (r *runner) fault(f Fault) {
	switch f.Kind {
	case "crash":
		if !r.sleepUntil(f.AtNs) {
			return
		}
		r.crash(r.nodes[f.Node])
		if f.RestartNs != nil && r.sleepUntil(*f.RestartNs) {
			r.restart(f.Node)
		}
	case "leave":
		if !r.sleepUntil(f.AtNs) {
			return
		}
		n := r.nodes[f.Node]
		n.mu.Lock()
		if !n.down {
			n.Leave(f.Topic)
		}
		n.mu.Unlock()
		if f.RejoinNs != nil && r.sleepUntil(*f.RejoinNs) {
			n.mu.Lock()
			if !n.down {
				if err := n.Rejoin(n.ctx(), f.Topic); err != nil {
					r.progress.warn(fmt.Sprintf("node %d: rejoining topic %d: %v", f.Node, f.Topic, err))
				}
			}
			n.mu.Unlock()
		}
	}
}

// crash stops n's router and closes its host, as a killed process: its peers see the
// connections end.
func (r *runner) crash(n *simNode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return
	}
	n.cancel()
	_ = n.H.Close()
	n.down = true
}

// restart brings node i back with the same identity and address, a fresh router and
// the same trace, and dials every topology neighbour again (none of them redials).
func (r *runner) restart(i int) {
	n := r.nodes[i]
	h, err := r.newHost(i)
	if err != nil {
		r.progress.warn(fmt.Sprintf("node %d: restarting the host: %v", i, err))
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	n.mu.Lock()
	n.cancel = cancel
	n.nodeCtx = ctx
	err = n.Restart(ctx, h)
	n.down = err != nil
	n.mu.Unlock()
	if err != nil {
		_ = h.Close()
		r.progress.warn(fmt.Sprintf("node %d: %v", i, err))
		return
	}
	r.dial(n, func(_ gossipnode.PeerConfig) bool { return true })
}

func (n *simNode) ctx() context.Context { return n.nodeCtx }
