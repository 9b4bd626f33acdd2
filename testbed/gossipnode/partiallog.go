package gossipnode

import (
	"bufio"
	"encoding/json"
	"os"
)

// PartsFile holds one line per part a node received (with partial.log_parts).
const PartsFile = "parts.ndjson"

// How a node came to hold a part, or to complete a group.
const (
	viaMempool = "mempool" // held before the group was published
	viaPartial = "partial" // a partial message
	viaFull    = "full"    // the full message
	viaPublish = "publish" // the publisher holds every part
)

// partialRecord is one group as one node saw it; node.json's "partial" list. go traces
// nothing of partial messages (trace.go has no event for them), so this is the record.
type partialRecord struct {
	Msg       uint32 `json:"msg"`
	LearnedNs int64  `json:"learned_ns"` // first heard of the group (ns since the epoch)
	Held      int    `json:"held"`       // parts held when it learned the group
	PartsRecv int    `json:"parts_recv"` // new parts from partial messages
	PartsDup  int    `json:"parts_dup"`  // parts received that it already held
	// PartsViaFull are the parts it still lacked when the full message arrived.
	PartsViaFull int    `json:"parts_via_full"`
	CompleteNs   *int64 `json:"complete_ns"`
	CompleteVia  string `json:"complete_via"`
	// CompleteFrom is the node that sent the last missing part, or, for a group complete
	// from the mempool, the node it learned the group from (-1: none or unknown).
	CompleteFrom int    `json:"complete_from"`
	RPCsRecv     int    `json:"rpcs_recv"`          // partial RPCs of this group that reached the application
	BytesRecv    uint64 `json:"bytes_partial_recv"` // their framed size
	BadParts     int    `json:"bad_parts"`          // partial messages that failed to decode
}

func (r *partialRecord) complete(t int64, via string, from int) {
	r.CompleteNs, r.CompleteVia, r.CompleteFrom = &t, via, from
}

// partLine is one line of parts.ndjson.
type partLine struct {
	T    int64  `json:"t_ns"`
	Msg  uint32 `json:"msg"`
	Part int    `json:"part"`
	From int    `json:"from"`
	Dup  bool   `json:"dup"`
	Via  string `json:"via"`
}

// partLog keeps the part lines in memory until the node finishes (called with the
// application's mutex held).
type partLog struct {
	keep  bool
	lines []partLine
}

func (l *partLog) part(t int64, msg uint32, i, from int, dup bool, via string) {
	if l.keep {
		l.lines = append(l.lines, partLine{T: t, Msg: msg, Part: i, From: from, Dup: dup, Via: via})
	}
}

func (l *partLog) write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, line := range l.lines {
		if err := enc.Encode(line); err != nil {
			_ = f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
