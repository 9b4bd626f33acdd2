package gossipnode

import (
	"encoding/binary"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"google.golang.org/protobuf/proto"
)

// Traffic kinds, in the order and spelling of the `traffic` table (tables.py).
// partial: partial-message RPCs that carry parts (items: parts); partsmeta: their parts
// metadata, and metadata-only RPCs (items: metadata fields); extensions: the v1.3
// extensions control message (items: messages).
const (
	kindPayload = iota
	kindIHave
	kindIWant
	kindGraft
	kindPrune
	kindIDontWant
	kindIAnnounce
	kindINeed
	kindSubscribe
	kindPartial
	kindPartsMeta
	kindExtensions
	kindCount
)

var kindNames = [kindCount]string{
	"payload", "ihave", "iwant", "graft", "prune", "idontwant", "iannounce", "ineed", "subscribe",
	"partial", "partsmeta", "extensions",
}

// overheadOrder is where framing and wrappers are charged: the first kind present, in
// the order the model uses (crates/engine/src/rpc.rs `measure`), so both backends
// attribute the same bytes to the same kind. IDONTWANT comes after the model's kinds.
// A partial RPC travels alone (extensions.go partialMessageRouter.SendRPC), so its
// frame goes to partial when it carries parts and to partsmeta otherwise; the
// extensions message rides on the hello, whose frame and control wrapper go to subscribe.
var overheadOrder = [...]int{kindPayload, kindSubscribe, kindGraft, kindPrune, kindIHave, kindIWant, kindIDontWant, kindPartial, kindPartsMeta, kindExtensions}

// rpcMeasure is what one RPC carries: items and wire bytes per kind.
type rpcMeasure struct {
	items [kindCount]uint64
	bytes [kindCount]uint64
}

func varintLen(v uint64) uint64 {
	n := uint64(1)
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// fieldLen is a length-delimited field of a small field number: tag + length + body.
func fieldLen(body uint64) uint64 { return 1 + varintLen(body) + body }

// measureRPC sizes an RPC as it goes on the wire (uvarint length prefix + protobuf) and
// splits those bytes over kinds: each entry to its kind, and the control wrapper, the
// framing and anything unattributed (extensions) to the first kind present. The kinds
// add up to exactly the framed size; rpcsize_test.go checks that against proto.Marshal.
func measureRPC(rpc *pb.RPC) rpcMeasure { return measureRPCParts(rpc, nil) }

// measureRPCParts is measureRPC with the application's count of the parts a partial
// message carries (nil: count each partial message as one item).
func measureRPCParts(rpc *pb.RPC, countParts func([]byte) uint64) rpcMeasure {
	var m rpcMeasure
	measurePartial(&m, rpc.GetPartial(), countParts)
	for _, msg := range rpc.GetPublish() {
		m.bytes[kindPayload] += fieldLen(uint64(proto.Size(msg)))
		m.items[kindPayload]++
	}
	for _, sub := range rpc.GetSubscriptions() {
		m.bytes[kindSubscribe] += fieldLen(uint64(proto.Size(sub)))
		m.items[kindSubscribe]++
	}
	if ctl := rpc.GetControl(); ctl != nil {
		for _, ih := range ctl.GetIhave() {
			m.bytes[kindIHave] += fieldLen(uint64(proto.Size(ih)))
			m.items[kindIHave] += uint64(len(ih.GetMessageIDs()))
		}
		for _, iw := range ctl.GetIwant() {
			m.bytes[kindIWant] += fieldLen(uint64(proto.Size(iw)))
			m.items[kindIWant] += uint64(len(iw.GetMessageIDs()))
		}
		for _, g := range ctl.GetGraft() {
			m.bytes[kindGraft] += fieldLen(uint64(proto.Size(g)))
			m.items[kindGraft]++
		}
		for _, p := range ctl.GetPrune() {
			m.bytes[kindPrune] += fieldLen(uint64(proto.Size(p)))
			m.items[kindPrune]++
		}
		for _, d := range ctl.GetIdontwant() {
			m.bytes[kindIDontWant] += fieldLen(uint64(proto.Size(d)))
			m.items[kindIDontWant] += uint64(len(d.GetMessageIDs()))
		}
		if ext := ctl.GetExtensions(); ext != nil {
			m.bytes[kindExtensions] += fieldLen(uint64(proto.Size(ext)))
			m.items[kindExtensions]++
		}
	}
	body := uint64(proto.Size(rpc))
	total := varintLen(body) + body
	var counted uint64
	for _, b := range m.bytes {
		counted += b
	}
	first := kindPayload
	for _, k := range overheadOrder {
		if m.bytes[k] > 0 {
			first = k
			break
		}
	}
	if total > counted {
		m.bytes[first] += total - counted
	}
	return m
}

// measurePartial charges RPC field 10 (rpc.proto PartialMessagesExtension): its
// metadata field to partsmeta; the rest (field header, topic, group, the parts) to
// partial when it carries parts, else to partsmeta too.
func measurePartial(m *rpcMeasure, p *pb.PartialMessagesExtension, countParts func([]byte) uint64) {
	if p == nil {
		return
	}
	whole := fieldLen(uint64(proto.Size(p)))
	if p.PartsMetadata != nil {
		m.items[kindPartsMeta]++
	}
	if p.PartialMessage == nil {
		m.bytes[kindPartsMeta] += whole
		return
	}
	var meta uint64
	if p.PartsMetadata != nil {
		meta = fieldLen(uint64(len(p.PartsMetadata)))
	}
	m.bytes[kindPartsMeta] += meta
	m.bytes[kindPartial] += whole - meta
	if countParts == nil {
		m.items[kindPartial]++
	} else {
		m.items[kindPartial] += countParts(p.PartialMessage)
	}
}

// framedSize is the RPC's size on the wire, computed independently by marshalling it.
func framedSize(rpc *pb.RPC) (uint64, error) {
	raw, err := proto.Marshal(rpc)
	if err != nil {
		return 0, err
	}
	var prefix [binary.MaxVarintLen64]byte
	return uint64(binary.PutUvarint(prefix[:], uint64(len(raw))) + len(raw)), nil
}
