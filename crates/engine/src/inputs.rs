//! What the caller gives the engine besides the config: the publish schedule, the
//! latency and loss of each edge, and the message table built from the schedule.

use crate::config::Time;
use crate::error::EngineError;

/// The publish schedule, drawn by the caller (the testbed uses the same one).
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    pub t_intended_ns: Vec<Time>,
    pub publisher: Vec<u32>,
    pub size: Vec<u32>,
    pub topic: Vec<u16>,
    pub batch: Vec<u32>,
}

impl Schedule {
    pub fn len(&self) -> usize {
        self.t_intended_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_intended_ns.is_empty()
    }

    pub(crate) fn check(&self, nodes: u32, topics: u16) -> Result<(), EngineError> {
        let n = self.len();
        if [
            self.publisher.len(),
            self.size.len(),
            self.topic.len(),
            self.batch.len(),
        ]
        .iter()
        .any(|&len| len != n)
        {
            return Err(EngineError::input(
                "schedule",
                "schedule columns have different lengths",
            ));
        }
        if self.t_intended_ns.windows(2).any(|w| w[0] > w[1]) {
            return Err(EngineError::input(
                "schedule",
                "schedule is not sorted by time",
            ));
        }
        if let Some(p) = self.publisher.iter().find(|&&p| p >= nodes) {
            return Err(EngineError::input(
                "schedule",
                format!("schedule names publisher {p} but there are {nodes} nodes"),
            ));
        }
        if let Some(t) = self.topic.iter().find(|&&t| t >= topics) {
            return Err(EngineError::input(
                "schedule",
                format!("schedule names topic {t} but there are {topics} topics"),
            ));
        }
        Ok(())
    }
}

/// Latency and loss of each edge in each direction: entry 2 i is edge i from dialer to
/// listener, 2 i + 1 the way back. Empty vectors mean "use the config's model".
#[derive(Clone, Debug, Default)]
pub struct EdgeProperties {
    pub latency_ns: Vec<Time>,
    pub loss: Vec<f64>,
}

impl EdgeProperties {
    pub(crate) fn check(&self, edges: usize) -> Result<(), EngineError> {
        for (name, len) in [
            ("edge_latency", self.latency_ns.len()),
            ("edge_loss", self.loss.len()),
        ] {
            if len != 0 && len != 2 * edges {
                return Err(EngineError::input(
                    name,
                    format!("{name} has {len} entries for {edges} edges (need 2 per edge)"),
                ));
            }
        }
        if let Some(p) = self.loss.iter().find(|p| !(0.0..1.0).contains(*p)) {
            return Err(EngineError::input(
                "edge_loss",
                format!("edge loss must be in [0, 1), got {p}"),
            ));
        }
        Ok(())
    }
}

/// One published message. Payload bytes are never materialised: only their size.
#[derive(Clone, Debug)]
pub struct Message {
    pub publisher: u32,
    pub topic: u16,
    pub size: u32,
    pub batch: u32,
    pub t_intended: Time,
    /// None until published.
    pub t_publish: Option<Time>,
    /// Payload copies received by all nodes (first receipts and duplicates).
    pub receipts: u64,
}

/// The bytes of message `msg`'s data, which its signature and a content-addressed id
/// cover: its `size`, or `invalid_size` for a message an adversary made up (an id past
/// the schedule's).
pub(crate) fn data_size(messages: &[Message], invalid_size: u32, msg: u32) -> u64 {
    messages
        .get(msg as usize)
        .map_or(u64::from(invalid_size), |m| u64::from(m.size))
}
