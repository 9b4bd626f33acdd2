package gossipnode

import (
	"encoding/base64"
	"path/filepath"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// startPartial sets up the partial-messages application when the workload has one.
func (n *Node) startPartial() error {
	c := n.C.Partial
	if c == nil {
		return nil
	}
	if err := c.check(n.C); err != nil {
		return err
	}
	clock := func() int64 { return time.Now().UnixNano() - n.epoch }
	index := func(p peer.ID) int {
		if i, ok := n.ids[p]; ok {
			return i
		}
		return -1
	}
	app, err := newPartialApp(c, clock, index)
	if err != nil {
		return err
	}
	app.topics = n.topicByName
	n.partial = app
	return nil
}

func (n *Node) topicByName(name string) *pubsub.Topic {
	for _, t := range n.Topics {
		if t.String() == name {
			return t
		}
	}
	return nil
}

// publishGroup publishes publication pub as a group of parts and records it like a
// whole message, under the id its full message has (a content id: the same at every
// node that publishes or receives it), computed here rather than traced, since the
// full message may never be published (full_fallback off).
func (n *Node) publishGroup(pub Publication) {
	full := n.partial.layout.full(pub.Msg)
	t0 := time.Now().UnixNano()
	err := n.partial.publishGroup(pub.Msg, TopicName(pub.Topic))
	rec := publishRecord{Msg: pub.Msg, TPublish: t0 - n.epoch, TReturned: time.Now().UnixNano() - n.epoch}
	rec.ID = base64.StdEncoding.EncodeToString([]byte(ethereumMessageID(&pb.Message{Data: full})))
	if err != nil {
		rec.Error = err.Error()
	}
	n.Result.Publishes = append(n.Result.Publishes, rec)
}

// finishPartial adds the groups' records and the partial RPCs the library refused
// before the application saw them (its peer-initiated group limits,
// partialmsgs.go groupState; go only logs those; their sender is unknown, peer -1) to
// node.json, and writes parts.ndjson.
func (n *Node) finishPartial() error {
	app := n.partial
	if app == nil {
		return nil
	}
	n.Result.Partial = app.records()
	if !app.enabled() {
		return nil
	}
	app.mu.Lock()
	handled, log := app.handled, app.log
	app.mu.Unlock()
	n.Raw.mu.Lock()
	if seen := n.Raw.partialRecv; seen > handled {
		n.Result.Drops = append(n.Result.Drops, dropRecord{Peer: -1, Kind: kindNames[kindPartial], Reason: "partial-group-limit", Count: seen - handled})
	}
	n.Raw.mu.Unlock()
	if !log.keep {
		return nil
	}
	return log.write(filepath.Join(n.C.Dir, PartsFile))
}
