package gossipnode

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/libp2p/go-libp2p-pubsub/partialmessages/bitmap"
)

// partLayout is how gossiplab encodes a group's parts. go-libp2p-pubsub moves opaque
// bytes; the encoding is the application's (partialmsgs.go: PublishAction), and both
// backends size it the same way:
//   - parts metadata: the bitmap of the parts held, go's bitmap layout, ⌈P/8⌉ bytes;
//   - a partial message: the bitmap of the parts it carries, then those parts in index
//     order, each part_size + part_overhead bytes;
//   - the full message: P parts and full_overhead bytes, as one whole gossipsub message.
type partLayout struct {
	parts   int // P
	partLen int // part_size + part_overhead
	metaLen int // ⌈P/8⌉
	fullLen int // P × partLen + full_overhead
	gidLen  int
}

func newPartLayout(c *PartialConfig) partLayout {
	partLen := c.PartSize + c.PartOverhead
	return partLayout{
		parts: c.Parts, partLen: partLen, metaLen: (c.Parts + 7) / 8,
		fullLen: c.Parts*partLen + c.FullOverhead, gidLen: c.GroupIDSize,
	}
}

// groupID is message msg's group id: the index in its first four bytes (big endian),
// zeros after, so that any node maps an id back to its schedule row.
func (l partLayout) groupID(msg uint32) []byte {
	gid := make([]byte, l.gidLen)
	binary.BigEndian.PutUint32(gid, msg)
	return gid
}

func (l partLayout) msgOfGroup(gid []byte) (uint32, error) {
	if len(gid) != l.gidLen {
		return 0, fmt.Errorf("group id of %d bytes, want %d", len(gid), l.gidLen)
	}
	return binary.BigEndian.Uint32(gid), nil
}

// full is the group's full message: the same bytes at every node (payload's layout, the
// index first), so that its content id is the same whoever publishes it.
func (l partLayout) full(msg uint32) []byte { return payload(msg, l.fullLen) }

func (l partLayout) none() bitmap.Bitmap { return make(bitmap.Bitmap, l.metaLen) }

func (l partLayout) all() bitmap.Bitmap {
	b := l.none()
	for i := range l.parts {
		b.Set(i)
	}
	return b
}

// part is part i of group msg: the indexes in its first bytes, so a receiver can check
// that the bytes it got are the part the bitmap says.
func (l partLayout) part(msg uint32, i int, into []byte) {
	var head [6]byte
	binary.BigEndian.PutUint32(head[:4], msg)
	binary.BigEndian.PutUint16(head[4:], uint16(i))
	copy(into, head[:])
}

// encode is the partial message carrying the parts set in `which`.
func (l partLayout) encode(msg uint32, which bitmap.Bitmap) []byte {
	k := which.OnesCount()
	out := make([]byte, l.metaLen+k*l.partLen)
	copy(out, which)
	at := l.metaLen
	for i := range l.parts {
		if which.Get(i) {
			l.part(msg, i, out[at:at+l.partLen])
			at += l.partLen
		}
	}
	return out
}

// countParts is how many parts a partial message carries (its bitmap's ones).
func (l partLayout) countParts(data []byte) uint64 {
	return uint64(bitmap.Bitmap(data[:min(len(data), l.metaLen)]).OnesCount())
}

// decode checks a partial message of group msg and returns the parts it carries.
func (l partLayout) decode(msg uint32, data []byte) (bitmap.Bitmap, error) {
	if len(data) < l.metaLen {
		return nil, fmt.Errorf("partial message of %d bytes is shorter than its %d-byte bitmap", len(data), l.metaLen)
	}
	which := bitmap.Bitmap(append([]byte(nil), data[:l.metaLen]...))
	k := which.OnesCount()
	if want := l.metaLen + k*l.partLen; len(data) != want {
		return nil, fmt.Errorf("partial message of %d bytes for %d parts, want %d", len(data), k, want)
	}
	at := l.metaLen
	expect := make([]byte, l.partLen)
	for i := range l.parts {
		if !which.Get(i) {
			continue
		}
		l.part(msg, i, expect)
		head := min(6, l.partLen)
		if string(data[at:at+head]) != string(expect[:head]) {
			return nil, fmt.Errorf("part %d of message %d carries another part's bytes", i, msg)
		}
		at += l.partLen
	}
	return which, nil
}

// parseHeld reads PartialConfig.Held: message index -> bitmap.
func (l partLayout) parseHeld(held map[string]string) (map[uint32]bitmap.Bitmap, error) {
	out := make(map[uint32]bitmap.Bitmap, len(held))
	for key, value := range held {
		msg, err := strconv.ParseUint(key, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("partial.held: key %q is not a message index", key)
		}
		raw, err := hex.DecodeString(value)
		if err != nil || len(raw) != l.metaLen {
			return nil, fmt.Errorf("partial.held[%s]: want %d bytes of hex (go's bitmap of %d parts), got %q", key, l.metaLen, l.parts, value)
		}
		out[uint32(msg)] = bitmap.Bitmap(raw)
	}
	return out, nil
}

// missing is what `have` holds that `peer` lacks (have ∖ peer).
func missing(have, peer bitmap.Bitmap) bitmap.Bitmap {
	out := append(bitmap.Bitmap(nil), have...)
	for i := range min(len(out), len(peer)) {
		out[i] &^= peer[i]
	}
	return out
}

func clone(b bitmap.Bitmap) bitmap.Bitmap { return append(bitmap.Bitmap(nil), b...) }
