package gossipnode

// The CPU cost of a message's signature by the message's size, for the model's
// cpu.per_kb_copy and cpu.per_kb_publish (python/gossiplab/scenario/cpu.py). Each step
// follows go-libp2p-pubsub v0.17.0's sign.go, whose functions are not exported:
// signMessage marshals the message, prefixes it and signs it (ed25519 hashes the signed
// bytes twice, SHA-512); verifyMessageSignature clones the message, marshals the clone
// without its signature and key, prefixes it and verifies it (one SHA-512 pass). A
// publication is signed, then checked as every copy is (topic.go:Publish signs,
// validation.go:PushLocal validates).
//
//	cd testbed && taskset -c 1 go test ./gossipnode -run '^$' -bench Signature -count 3

import (
	"crypto/rand"
	"fmt"
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"google.golang.org/protobuf/proto"
)

const signPrefix = "libp2p-pubsub:" // pubsub.SignPrefix

func signedMessage(b *testing.B, key crypto.PrivKey, size int) *pb.Message {
	from := []byte("a peer id of the usual length, 38 bytes")
	topic := "topic"
	m := &pb.Message{From: from, Data: make([]byte, size), Seqno: make([]byte, 8), Topic: &topic}
	m.Signature = sign(b, key, m)
	return m
}

func sign(b *testing.B, key crypto.PrivKey, m *pb.Message) []byte {
	bytes, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	sig, err := key.Sign(append([]byte(signPrefix), bytes...))
	if err != nil {
		b.Fatal(err)
	}
	return sig
}

func verify(b *testing.B, key crypto.PubKey, m *pb.Message) {
	xm := proto.CloneOf(m)
	xm.Signature, xm.Key = nil, nil
	bytes, err := proto.Marshal(xm)
	if err != nil {
		b.Fatal(err)
	}
	if ok, err := key.Verify(append([]byte(signPrefix), bytes...), m.Signature); !ok || err != nil {
		b.Fatal("the signature does not verify", err)
	}
}

func BenchmarkSignature(b *testing.B) {
	key, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1_000, 32_000, 128_000, 512_000} {
		m := signedMessage(b, key, size)
		unsigned := proto.CloneOf(m)
		unsigned.Signature = nil
		b.Run(fmt.Sprintf("copy/%dB", size), func(b *testing.B) {
			for range b.N {
				verify(b, pub, m)
			}
		})
		b.Run(fmt.Sprintf("publish/%dB", size), func(b *testing.B) {
			for range b.N {
				verify(b, pub, &pb.Message{
					From: unsigned.From, Data: unsigned.Data, Seqno: unsigned.Seqno,
					Topic: unsigned.Topic, Signature: sign(b, key, unsigned),
				})
			}
		})
	}
}
