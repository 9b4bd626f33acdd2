//! A yamux stream's flow control, one direction of one connection (go-yamux v5.1.0):
//! how a receiving application that stops reading stops its sender.
//!
//! - The sender may have at most a window of unacknowledged bytes on the stream: it
//!   starts at 256 KiB (`const.go:initialStreamWindow`). `stream.go:Stream.Write` sends
//!   at most the window left per frame and reduces it; with nothing left it blocks
//!   (`sendNotifyCh`) until a window update comes, holding the rest of what it writes.
//! - The receiver's `recvLoop` buffers the stream's data whatever the application does;
//!   the window reopens only as the application reads. Each `Stream.Read` calls
//!   `sendWindowUpdate`, which sends an update only once the bytes read since the last
//!   update reach half the window (`util.go:segmentedBuffer.GrowTo`: `delta < max/2` →
//!   no update), and the update grants exactly those bytes. The update is a frame the
//!   reader puts on its connection's `sendCh` (`session.go:sendMsg`), written by the
//!   receiver's sendLoop behind the frames queued before it (`transport::SendLoop`,
//!   `event_loop.rs`).
//!
//! Not modelled: the window's auto-tuning (`stream.go:sendWindowUpdate` doubles it, up
//! to `maxStreamWindow` = 16 MiB, when updates come within 4 RTTs of each other and the
//! resource manager grants the memory).

/// go-yamux's `initialStreamWindow`.
pub const INITIAL_STREAM_WINDOW: u64 = 256 * 1024;

pub struct StreamWindow {
    /// The receive window (`Stream.recvWindow`).
    window: u64,
    /// Bytes the sender may still send (`Stream.sendWindow`).
    credit: u64,
    /// Bytes the receiving application read since the receiver's last update.
    read_since_update: u64,
}

impl StreamWindow {
    pub fn new(window: u64) -> Self {
        Self {
            window,
            credit: window,
            read_since_update: 0,
        }
    }

    /// The sender writes `bytes`: it sends what the window allows now and returns that
    /// many; the writer is blocked with the rest until `update` (`Stream.Write`).
    pub fn write(&mut self, bytes: u64) -> u64 {
        let sent = bytes.min(self.credit);
        self.credit -= sent;
        sent
    }

    /// True if the sender's window is closed: a write now blocks.
    pub fn closed(&self) -> bool {
        self.credit == 0
    }

    /// The receiving application read `bytes`: the window update it sends, if any (the
    /// bytes read since the last one, once they reach half the window).
    pub fn read(&mut self, bytes: u64) -> Option<u64> {
        self.read_since_update += bytes;
        if self.read_since_update < self.window / 2 {
            return None;
        }
        Some(std::mem::take(&mut self.read_since_update))
    }

    /// A window update of `delta` bytes reached the sender.
    pub fn update(&mut self, delta: u64) {
        self.credit += delta;
        debug_assert!(self.credit <= self.window, "credit beyond the window");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_that_reads_nothing_stops_its_sender_after_one_window() {
        // 1000-byte RPCs: 262 go whole, the 263rd gets the last 144 bytes and blocks.
        let mut w = StreamWindow::new(INITIAL_STREAM_WINDOW);
        let whole = (0..262).filter(|_| w.write(1000) == 1000).count();
        assert_eq!(whole, 262);
        assert!(!w.closed());
        assert_eq!(w.write(1000), 262_144 - 262_000);
        assert!(w.closed());
        assert_eq!(w.write(1000), 0, "blocked until an update");
    }

    #[test]
    fn the_receiver_updates_once_it_has_read_half_the_window() {
        // util.go:GrowTo: no update below max/2 = 131,072 bytes read.
        let mut w = StreamWindow::new(INITIAL_STREAM_WINDOW);
        w.write(INITIAL_STREAM_WINDOW);
        for _ in 0..131 {
            assert_eq!(w.read(1000), None);
        }
        assert_eq!(
            w.read(1000),
            Some(132_000),
            "the 132nd read crosses 131,072"
        );
        assert!(w.closed(), "until the update arrives");
        w.update(132_000);
        assert_eq!(w.write(200_000), 132_000);
        assert_eq!(w.read(1000), None, "counting starts again");
    }

    #[test]
    fn a_reader_that_keeps_up_never_closes_the_window() {
        // Writes and reads of 1000 bytes in step, updates delivered at once: the bytes
        // in flight never exceed half the window plus one RPC.
        let mut w = StreamWindow::new(INITIAL_STREAM_WINDOW);
        for _ in 0..10_000 {
            assert_eq!(w.write(1000), 1000);
            if let Some(delta) = w.read(1000) {
                w.update(delta);
            }
            assert!(w.credit >= INITIAL_STREAM_WINDOW / 2 - 1000);
        }
    }
}
