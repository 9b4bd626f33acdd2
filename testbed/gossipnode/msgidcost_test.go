package gossipnode

// The CPU cost of a content-addressed message id by the message's size, for the model's
// cpu.per_kb_message_id (python/gossiplab/scenario/cpu.py): go-libp2p-pubsub v0.17.0
// computes a message's id once per copy it receives (pubsub.go:shouldPush, from the
// event loop, duplicates included) and once per publication (validation.go:validate),
// and the id of protocol.message_id = "ethereum" hashes the whole data (params.go:
// ethereumMessageID, SHA-256).
//
//	cd testbed && taskset -c 1 go test ./gossipnode -run '^$' -bench MessageID -count 3

import (
	"fmt"
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

func BenchmarkMessageID(b *testing.B) {
	for _, size := range []int{1_000, 32_000, 128_000, 512_000} {
		m := &pb.Message{Data: make([]byte, size)}
		b.Run(fmt.Sprintf("ethereum/%dB", size), func(b *testing.B) {
			for range b.N {
				ethereumMessageID(m)
			}
		})
	}
}
