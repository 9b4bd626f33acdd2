//! A limited downlink shared by the connections arriving on it
//! (`network.downlink_sharing = "fair"`).
//!
//! A real downlink queues packets, not messages: the packets of connections arriving at
//! once interleave, in a packet FIFO (the testbed's HTB with pfifo; simnet's links, a
//! FIFO with a 100 ms drop-tail buffer, `testbed/simnet/lean.go`) as in queues per flow
//! served in turn (marcopolo/simnet's FQ-CoDel links, `simlink.go:NewSimlink`,
//! `fq_codel.go`). Their fluid form is processor sharing: the connections being read
//! share the link equally, so a 30 kB IHAVE arriving while eight 128 KiB messages are
//! read gets a ninth of the link instead of waiting for all of them, as one FIFO of
//! whole RPCs (`"fifo"`, `Network::read`) makes it wait.
//!
//! The downlink reads an RPC while it arrives. The model knows when its last byte
//! reaches the interface (`Event::Arrive`) and how long its bytes took to leave the
//! sender: an uplink that serves its connections in turn (`"fair"`, `"fifo"`) wrote
//! them over `Rpc::written_over` at the share it gave them, so they arrived at least
//! that spread out; one that releases what windows allow (`"window"`, `"shadow"`) may
//! send a window's pieces back to back, at the sender's line rate. So its connection has
//! read of it what its share (the link over the connections being read, itself
//! included) allows over the longer of the two, if no earlier RPC of the same connection
//! is still being read (a connection's bytes are read in order); the rest waits for its
//! share. Both are the least spread the bytes can have had, so the downlink is never
//! credited with bytes that had not come: an idle downlink as fast as the sender adds
//! nothing, one slower finishes a copy its own serialization time after the copy's first
//! byte arrived; a sender with an unlimited uplink delivers at once, to be read.
//!
//! Equal shares are kept with a virtual clock (generalized processor sharing): the
//! service each busy connection has had, `served`, grows by the link's bits over the
//! busy connections' count, and an RPC is read when `served` reaches its finish tag, its
//! bits counted from where its connection's previous RPC finishes, or from now. Tags are
//! whole numbers (bit-nanoseconds per second), so runs are exact and deterministic.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::config::Time;
use crate::network::serialization_ns;
use crate::queue::Event;
use crate::sim::Simulation;

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// One connection with RPCs still being read.
struct BusyConnection {
    link: u32,
    /// Finish tag of its last RPC being read.
    last_finish: u128,
    /// Its RPCs being read.
    reading: u32,
}

/// The fair downlink of one node.
#[derive(Default)]
pub struct SharedDownlink {
    /// Service per busy connection so far, in bit-nanoseconds per second (a connection
    /// alone on a link of `bps` gets `bps` per ns).
    served: u128,
    /// When `served` was last brought up to date.
    updated: Time,
    busy: Vec<BusyConnection>,
    /// RPCs being read: (finish tag, arrival order, link, rpc).
    reading: BinaryHeap<Reverse<(u128, u64, u32, u32)>>,
    arrivals: u64,
    /// The pending read event's number; an event with another number is stale.
    pub(crate) generation: u32,
}

impl SharedDownlink {
    /// Bring the virtual clock to `now` on a link of `bps`.
    fn advance(&mut self, now: Time, bps: u64) {
        if !self.busy.is_empty() {
            let elapsed = u128::from(now - self.updated);
            self.served += elapsed * u128::from(bps) / self.busy.len() as u128;
        }
        self.updated = now;
    }

    /// An RPC's last byte arrived at `now` (`Arrival`). Returns true if the downlink has
    /// already read it.
    pub fn arrive(&mut self, now: Time, bps: u64, arrival: Arrival) -> bool {
        self.advance(now, bps);
        let bits = u128::from(arrival.bytes) * 8 * NANOS_PER_SECOND;
        let busy = self.busy.iter().position(|c| c.link == arrival.link);
        let start = match busy {
            Some(i) => self.busy[i].last_finish,
            None => self.served,
        };
        let read_while_arriving = match busy {
            // Behind its connection's earlier RPC: nothing of it was read yet.
            Some(_) => 0,
            None => {
                let share = u128::from(bps) / (self.busy.len() as u128 + 1);
                u128::from(arrival.span) * share
            }
        };
        let Some(left) = bits.checked_sub(read_while_arriving).filter(|&b| b > 0) else {
            return true;
        };
        let finish = start + left;
        match busy {
            Some(i) => {
                self.busy[i].last_finish = finish;
                self.busy[i].reading += 1;
            }
            None => self.busy.push(BusyConnection {
                link: arrival.link,
                last_finish: finish,
                reading: 1,
            }),
        }
        self.reading
            .push(Reverse((finish, self.arrivals, arrival.link, arrival.rpc)));
        self.arrivals += 1;
        false
    }

    /// When the next RPC will have been read, if any is being read.
    pub fn next_read(&self, bps: u64) -> Option<Time> {
        let Reverse((finish, ..)) = self.reading.peek()?;
        let left = finish.saturating_sub(self.served);
        let busy = self.busy.len() as u128;
        let ns = (left * busy).div_ceil(u128::from(bps));
        Some(self.updated + ns as Time)
    }

    /// Take every RPC read by `now`, in the order they finished, into `done` as
    /// (link, rpc).
    pub fn take_read(&mut self, now: Time, bps: u64, done: &mut Vec<(u32, u32)>) {
        self.advance(now, bps);
        while let Some(&Reverse((finish, _, link, rpc))) = self.reading.peek() {
            if finish > self.served {
                break;
            }
            self.reading.pop();
            let i = self
                .busy
                .iter()
                .position(|c| c.link == link)
                .expect("a connection being read is busy");
            self.busy[i].reading -= 1;
            if self.busy[i].reading == 0 {
                self.busy.swap_remove(i);
            }
            done.push((link, rpc));
        }
    }
}

impl Simulation {
    /// RPC `rpc` on `link` fully reached its receiver's limited downlink: it is in the
    /// receiver's hands once the downlink has read it.
    pub(crate) fn arrive_at_downlink(&mut self, link: u32, rpc: u32) {
        let now = self.now();
        let receiver = self.links.peer[link as usize];
        let r = self.rpcs.get(rpc);
        let (bytes, written_over) = (r.total_bytes(), r.written_over);
        if !self.net.shares_downlinks() {
            let done = self.net.read(now, receiver, bytes);
            self.queue
                .push(done, receiver, Event::Receive { link, rpc });
            return;
        }
        let sender = self.links.owner[link as usize];
        let span = serialization_ns(bytes, self.net.upload_bps(sender)).max(written_over);
        let bps = self.net.download_bps(receiver);
        let downlink = self.net.shared_downlink(receiver).expect("a fair downlink");
        let arrival = Arrival {
            link,
            rpc,
            bytes,
            span,
        };
        if downlink.arrive(now, bps, arrival) {
            self.queue.push(now, receiver, Event::Receive { link, rpc });
        } else {
            self.schedule_downlink_read(receiver);
        }
    }

    /// `node`'s fair downlink may have read RPCs: hand them to the node.
    pub(crate) fn downlink_read(&mut self, node: u32, generation: u32) {
        let now = self.now();
        let bps = self.net.download_bps(node);
        let mut done = std::mem::take(&mut self.net.read_scratch);
        let downlink = self.net.shared_downlink(node).expect("a fair downlink");
        if downlink.generation != generation {
            self.net.read_scratch = done;
            return; // a later arrival moved the next read
        }
        downlink.take_read(now, bps, &mut done);
        for (link, rpc) in done.drain(..) {
            self.queue.push(now, node, Event::Receive { link, rpc });
        }
        self.net.read_scratch = done;
        self.schedule_downlink_read(node);
    }

    /// Schedule `node`'s next downlink read, making any scheduled one stale.
    fn schedule_downlink_read(&mut self, node: u32) {
        let bps = self.net.download_bps(node);
        let downlink = self.net.shared_downlink(node).expect("a fair downlink");
        downlink.generation = downlink.generation.wrapping_add(1);
        let generation = downlink.generation;
        if let Some(at) = downlink.next_read(bps) {
            self.queue
                .push(at, node, Event::DownlinkRead { node, generation });
        }
    }
}

/// An RPC whose last byte reached a fair downlink.
pub struct Arrival {
    pub link: u32,
    pub rpc: u32,
    pub bytes: u64,
    /// Its bytes' time at the sender's line rate (0: unlimited).
    pub span: Time,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT_50: u64 = 50_000_000;

    /// Run the downlink to the end, reading RPCs as `next_read` says; returns
    /// (link, read at).
    fn read_all(d: &mut SharedDownlink) -> Vec<(u32, Time)> {
        let mut out = Vec::new();
        let mut done = Vec::new();
        while let Some(at) = d.next_read(MBIT_50) {
            d.take_read(at, MBIT_50, &mut done);
            out.extend(done.drain(..).map(|(link, _)| (link, at)));
        }
        out
    }

    fn arrival(link: u32, bytes: u64, span: Time) -> Arrival {
        Arrival {
            link,
            rpc: link,
            bytes,
            span,
        }
    }

    #[test]
    fn an_idle_downlink_as_fast_as_the_sender_has_read_a_copy_when_it_arrives() {
        let mut d = SharedDownlink::default();
        // 125,000 B at 50 Mbit: 20 ms to write, 20 ms to read.
        assert!(d.arrive(20_000_000, MBIT_50, arrival(0, 125_000, 20_000_000)));
        assert_eq!(d.next_read(MBIT_50), None);
    }

    #[test]
    fn a_downlink_slower_than_the_sender_reads_from_the_first_byte() {
        let mut d = SharedDownlink::default();
        // 2 ms at a fast sender's line rate, read at 50 Mbit in 20 ms from the first
        // byte's arrival at 8 ms: done at 28 ms.
        assert!(!d.arrive(10_000_000, MBIT_50, arrival(0, 125_000, 2_000_000)));
        assert_eq!(read_all(&mut d), vec![(0, 28_000_000)]);
    }

    #[test]
    fn a_small_rpc_shares_the_link_with_large_ones_instead_of_waiting_for_them() {
        // Two 1 MB copies arrive at 0 from fast senders (read nothing yet): each gets
        // half the link. A 10 kB IHAVE arrives at 10 ms on a third connection: a third
        // of the link from then, read 10,000 × 8 × 3 / 50 Mbit = 4.8 ms later. Alone,
        // the copies would take 160 ms each; they end together, at 320 ms plus the
        // IHAVE's 1.6 ms of the link.
        let mut d = SharedDownlink::default();
        assert!(!d.arrive(0, MBIT_50, arrival(0, 1_000_000, 0)));
        assert!(!d.arrive(0, MBIT_50, arrival(1, 1_000_000, 0)));
        assert_eq!(d.next_read(MBIT_50), Some(320_000_000));
        assert!(!d.arrive(10_000_000, MBIT_50, arrival(2, 10_000, 0)));
        assert_eq!(
            read_all(&mut d),
            vec![(2, 14_800_000), (0, 321_600_000), (1, 321_600_000)]
        );
    }

    #[test]
    fn a_connection_s_rpcs_are_read_in_order_and_share_as_one() {
        // Connection 0 has two RPCs of 100 kB, connection 1 one of 100 kB, all at 0:
        // connection 1 gets half the link for its one (done at 32 ms), connection 0 half
        // for its first (32 ms), then the whole link for its second (48 ms).
        let mut d = SharedDownlink::default();
        for link in [0, 0, 1] {
            assert!(!d.arrive(0, MBIT_50, arrival(link, 100_000, 0)));
        }
        assert_eq!(
            read_all(&mut d),
            vec![(0, 32_000_000), (1, 32_000_000), (0, 48_000_000)]
        );
    }
}
