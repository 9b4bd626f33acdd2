package main

import (
	"encoding/binary"
	"syscall"

	"golang.org/x/sys/unix"
)

// Accept verdicts, many to one sendmsg, written straight to the queue's netlink socket.
//
// One verdict per SetVerdict call costs a syscall plus the Go runtime's poller and thread
// hand-offs around it, which a profile of the stage showed as most of its CPU. The
// kernel reads every message of a datagram (net/netlink/af_netlink.c: netlink_rcv_skb
// loops over them), so the verdicts due at one wake-up go out in one sendmsg. Errors
// come back as NLMSG_ERROR on the queue socket, as they do for go-nfqueue's verdicts.

// Message layout (include/uapi/linux/netlink.h, netfilter/nfnetlink.h and
// netfilter/nfnetlink_queue.h): nlmsghdr (16 bytes, host order), nfgenmsg (family,
// version, queue number big-endian), then one attribute NFQA_VERDICT_HDR holding
// struct nfqnl_msg_verdict_hdr {__be32 verdict; __be32 id}.
const (
	nlmsgHeaderLen   = 16
	nfgenmsgLen      = 4
	nlattrHeaderLen  = 4
	verdictHdrLen    = 8
	verdictMsgLen    = nlmsgHeaderLen + nfgenmsgLen + nlattrHeaderLen + verdictHdrLen
	nfnlSubsysQueue  = 3 // NFNL_SUBSYS_QUEUE
	nfqnlMsgVerdict  = 1 // NFQNL_MSG_VERDICT
	nfqaVerdictHdr   = 2 // NFQA_VERDICT_HDR
	nfAccept         = 1 // NF_ACCEPT
	maxVerdictsPerTx = 2048
)

// appendVerdict appends one NF_ACCEPT verdict for packet `id` of `queue`.
func appendVerdict(buf []byte, queue uint16, id uint32) []byte {
	var m [verdictMsgLen]byte
	binary.NativeEndian.PutUint32(m[0:], verdictMsgLen)
	binary.NativeEndian.PutUint16(m[4:], nfnlSubsysQueue<<8|nfqnlMsgVerdict)
	binary.NativeEndian.PutUint16(m[6:], unix.NLM_F_REQUEST)
	// Sequence and port id stay 0: the kernel fills in the sender's port.
	m[16] = unix.AF_UNSPEC
	m[17] = unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(m[18:], queue)
	binary.NativeEndian.PutUint16(m[20:], nlattrHeaderLen+verdictHdrLen)
	binary.NativeEndian.PutUint16(m[22:], nfqaVerdictHdr)
	binary.BigEndian.PutUint32(m[24:], nfAccept)
	binary.BigEndian.PutUint32(m[28:], id)
	return append(buf, m[:]...)
}

// verdictWriter sends accept verdicts on the queue's socket.
type verdictWriter struct {
	raw   syscall.RawConn
	queue uint16
	buf   []byte
}

// accept sends NF_ACCEPT for every id, in as few sendmsg calls as fit; it returns how
// many verdicts could not be sent.
func (w *verdictWriter) accept(ids []uint32) uint64 {
	var failed uint64
	for len(ids) > 0 {
		n := min(len(ids), maxVerdictsPerTx)
		w.buf = w.buf[:0]
		for _, id := range ids[:n] {
			w.buf = appendVerdict(w.buf, w.queue, id)
		}
		if !w.send() {
			failed += uint64(n)
		}
		ids = ids[n:]
	}
	return failed
}

// send writes w.buf, trying again on the transient errors of a netlink send (a verdict
// that never arrives leaves its packet in the kernel's queue for good: a lost packet).
func (w *verdictWriter) send() bool {
	for range 3 {
		var sendErr error
		err := w.raw.Control(func(fd uintptr) {
			sendErr = unix.Sendto(int(fd), w.buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		})
		if err != nil {
			return false
		}
		switch sendErr {
		case nil:
			return true
		case unix.EINTR, unix.EAGAIN, unix.ENOBUFS:
			continue
		default:
			return false
		}
	}
	return false
}
