//! The resolved experiment the engine runs.
//!
//! The Python package turns a scenario file into this structure: every default is filled
//! in, every unit converted (times in nanoseconds, bandwidths in bits per second, sizes
//! in bytes), the topology built and the publish schedule drawn. The engine only checks
//! what it needs for its own invariants; user-facing validation lives in Python.

use serde::Deserialize;

use crate::error::EngineError;
use crate::goroutines::TurnCosts;
pub use crate::partial::PartialConfig;

pub type Time = u64;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub seed: u64,
    pub nodes: u32,
    /// Simulated time at which the run stops.
    pub end_ns: Time,
    pub topics: u16,
    pub network: NetworkConfig,
    pub protocol: ProtocolConfig,
    #[serde(default)]
    pub output: OutputConfig,
    /// Nodes that break the protocol on purpose.
    #[serde(default)]
    pub adversaries: Vec<Adversary>,
    /// Crashes, churn and partitions.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Nodes leaving and joining topics during the run (every node starts in every topic).
    #[serde(default)]
    pub subscription_changes: Vec<SubscriptionChange>,
    /// v1.3 partial messages: every message is a group of parts.
    #[serde(default)]
    pub partial: Option<PartialConfig>,
    /// Hosts, their cores and what CPU work costs (`cpu.rs`); the default charges nothing.
    #[serde(default)]
    pub cpu: CpuConfig,
}

/// Hosts and CPU costs. Costs are means in nanoseconds (per KB: per 1000 bytes), charged
/// on the node's host (see `cpu.rs` for where each sits in go-libp2p-pubsub).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuConfig {
    /// Consecutive node ids per host.
    pub nodes_per_host: u32,
    /// Cores of each host, shared by its nodes.
    pub cores: u32,
    pub per_rpc_received_ns: Time,
    pub per_kb_received_ns: Time,
    /// Each time a peer's reading goroutine wakes up (goes from waiting on the network
    /// to runnable), shared by every RPC it then reads before it waits again.
    pub per_read_wakeup_ns: Time,
    /// Each time a node with nothing to run gets work: its thread woken from the
    /// blocking `netpoll` (`runtime/proc.go:findRunnable`), shared by all the work it
    /// does before it idles again (`cpu.rs`, `node_wakeup`).
    pub per_node_wakeup_ns: Time,
    pub per_rpc_sent_ns: Time,
    pub per_kb_sent_ns: Time,
    /// The kernel's work per TCP segment a node sends, on its host's core at the write
    /// and charged to none of its goroutines (`cpu.rs`, `write_cost`).
    pub per_segment_kernel_ns: Time,
    /// Added to each node's `cpu_per_message_ns` for every validated copy.
    pub per_copy_ns: Time,
    /// Per 1000 bytes of a validated copy's message, added to `per_copy_ns`: checking a
    /// signature hashes the whole message (`sign.go:verifyMessageSignature`).
    pub per_kb_copy_ns: Time,
    pub per_publish_ns: Time,
    /// Per 1000 bytes of a publication's message, added to `per_publish_ns`: signing
    /// hashes it twice, and the publisher checks its own signature (`sign.go:signMessage`,
    /// `validation.go:PushLocal`).
    pub per_kb_publish_ns: Time,
    /// Per 1000 bytes of each copy received (duplicates included) and of each
    /// publication: a content-addressed message id hashes the data
    /// (`pubsub.go:shouldPush`, `validation.go:validate`).
    pub per_kb_message_id_ns: Time,
    /// Lognormal shape of every cost (0: constant) that has no sigma of its own below.
    pub sigma: f64,
    pub sigma_per_rpc_received: Option<f64>,
    pub sigma_per_kb_received: Option<f64>,
    pub sigma_per_rpc_sent: Option<f64>,
    pub sigma_per_kb_sent: Option<f64>,
    pub sigma_per_copy: Option<f64>,
    pub sigma_per_publish: Option<f64>,
    pub sigma_per_read_wakeup: Option<f64>,
    pub sigma_per_node_wakeup: Option<f64>,
    pub sigma_per_segment_kernel: Option<f64>,
    /// The kernel's time slice on a host whose nodes outnumber its cores (`slices.rs`);
    /// unset: Linux's default for the host's cores.
    pub time_slice_ns: Option<Time>,
    /// The kernel's tick (`1 / CONFIG_HZ`), and whether it ends a slice on time by a
    /// timer of its own (`HRTICK`) rather than at the next tick or wake-up (`slices.rs`).
    pub kernel_tick_ns: Time,
    pub hrtick: bool,
    /// Model pubsub's event loop (`event_loop.rs`): readers hand RPCs to it through a
    /// 32-slot channel and block when it is full. Time-sliced hosts only.
    pub event_loop: bool,
    /// Model each node's Go `sysmon` thread (`sysmon.rs`): its wake-ups let the
    /// kernel pick again. Time-sliced hosts only.
    pub sysmon: bool,
    /// The CPU time of each `sysmon` round, charged to its node (`slices.rs`).
    pub per_sysmon_round_ns: Time,
    /// The part of a yamux `sendLoop`'s and `recvLoop`'s CPU spent inside its write or
    /// read system call, where `sysmon` can find the node's P (`goroutines.rs`,
    /// `SyscallShares`); 1: the whole piece.
    pub send_loop_syscall_share: f64,
    pub recv_loop_syscall_share: f64,
    /// The event loop's work per RPC (`pubsub.go:handleIncomingRPC`).
    pub per_rpc_loop_ns: Time,
    /// The application's work per message it reads from its subscription, in its own
    /// goroutine, with the event loop (`subscription.rs`).
    pub per_app_message_ns: Time,
    /// The event loop's work per message it delivers and forwards
    /// (`pubsub.go:publishMessage`), besides `per_forward_loop_ns`.
    pub per_publish_loop_ns: Time,
    /// The event loop's work per peer it forwards a message to (`gossipsub.go:sendRPC`).
    pub per_forward_loop_ns: Time,
    /// Each turn of a goroutine of that kind, on time-sliced hosts
    /// (`goroutines.rs`, `TurnCosts`): a peer's reader, a peer's writer, the validation
    /// worker, the event loop, a connection's yamux `sendLoop` and `recvLoop`.
    pub per_reader_turn_ns: Time,
    pub per_writer_turn_ns: Time,
    pub per_validator_turn_ns: Time,
    pub per_loop_turn_ns: Time,
    pub per_send_loop_turn_ns: Time,
    pub per_recv_loop_turn_ns: Time,
    /// Nodes whose goroutines' run-queue waits are recorded (time-sliced hosts).
    pub record_waits: Vec<u32>,
}

impl CpuConfig {
    /// What each kind of goroutine's turn costs.
    pub fn turn_costs(&self) -> TurnCosts {
        TurnCosts {
            reader: self.per_reader_turn_ns,
            writer: self.per_writer_turn_ns,
            validator: self.per_validator_turn_ns,
            event_loop: self.per_loop_turn_ns,
            send_loop: self.per_send_loop_turn_ns,
            recv_loop: self.per_recv_loop_turn_ns,
        }
    }

    /// True if some work costs CPU (apart from `NetworkConfig::cpu_per_message_ns`).
    pub fn charges(&self) -> bool {
        [
            self.per_rpc_received_ns,
            self.per_kb_received_ns,
            self.per_read_wakeup_ns,
            self.per_node_wakeup_ns,
            self.per_rpc_sent_ns,
            self.per_kb_sent_ns,
            self.per_segment_kernel_ns,
            self.per_copy_ns,
            self.per_kb_copy_ns,
            self.per_publish_ns,
            self.per_kb_publish_ns,
            self.per_kb_message_id_ns,
            self.per_rpc_loop_ns,
            self.per_publish_loop_ns,
            self.per_forward_loop_ns,
            self.per_app_message_ns,
            self.per_reader_turn_ns,
            self.per_writer_turn_ns,
            self.per_validator_turn_ns,
            self.per_loop_turn_ns,
            self.per_send_loop_turn_ns,
            self.per_recv_loop_turn_ns,
            self.per_sysmon_round_ns,
        ]
        .iter()
        .any(|&c| c > 0)
    }

    /// Each cost's own sigma, `sigma` where it has none.
    pub fn sigmas(&self) -> [(&'static str, f64); 9] {
        let own = |s: Option<f64>| s.unwrap_or(self.sigma);
        [
            ("sigma_per_rpc_received", own(self.sigma_per_rpc_received)),
            ("sigma_per_kb_received", own(self.sigma_per_kb_received)),
            ("sigma_per_rpc_sent", own(self.sigma_per_rpc_sent)),
            ("sigma_per_kb_sent", own(self.sigma_per_kb_sent)),
            ("sigma_per_copy", own(self.sigma_per_copy)),
            ("sigma_per_publish", own(self.sigma_per_publish)),
            ("sigma_per_read_wakeup", own(self.sigma_per_read_wakeup)),
            ("sigma_per_node_wakeup", own(self.sigma_per_node_wakeup)),
            (
                "sigma_per_segment_kernel",
                own(self.sigma_per_segment_kernel),
            ),
        ]
    }
}

impl Default for CpuConfig {
    fn default() -> Self {
        Self {
            nodes_per_host: 1,
            cores: 1,
            per_rpc_received_ns: 0,
            per_kb_received_ns: 0,
            per_read_wakeup_ns: 0,
            per_node_wakeup_ns: 0,
            per_rpc_sent_ns: 0,
            per_kb_sent_ns: 0,
            per_segment_kernel_ns: 0,
            per_copy_ns: 0,
            per_kb_copy_ns: 0,
            per_publish_ns: 0,
            per_kb_publish_ns: 0,
            per_kb_message_id_ns: 0,
            sigma: 0.0,
            sigma_per_rpc_received: None,
            sigma_per_kb_received: None,
            sigma_per_rpc_sent: None,
            sigma_per_kb_sent: None,
            sigma_per_copy: None,
            sigma_per_publish: None,
            sigma_per_read_wakeup: None,
            sigma_per_node_wakeup: None,
            sigma_per_segment_kernel: None,
            time_slice_ns: None,
            kernel_tick_ns: 4_000_000,
            hrtick: false,
            event_loop: false,
            sysmon: false,
            per_sysmon_round_ns: 0,
            send_loop_syscall_share: 1.0,
            recv_loop_syscall_share: 1.0,
            per_rpc_loop_ns: 0,
            per_app_message_ns: 0,
            per_publish_loop_ns: 0,
            per_forward_loop_ns: 0,
            per_reader_turn_ns: 0,
            per_writer_turn_ns: 0,
            per_validator_turn_ns: 0,
            per_loop_turn_ns: 0,
            per_send_loop_turn_ns: 0,
            per_recv_loop_turn_ns: 0,
            record_waits: Vec::new(),
        }
    }
}

/// `node` leaves (`subscribe` false) or joins `topic` at `at_ns`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionChange {
    pub node: u32,
    pub topic: u16,
    pub at_ns: Time,
    pub subscribe: bool,
}

/// A time no run reaches: "until the end".
pub const FOREVER: Time = Time::MAX;

/// Ways an adversarial node departs from the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Misbehaviour {
    /// Never relays other nodes' messages (still publishes its own).
    DropForwards,
    /// Never answers IWANT.
    IgnoreIwant,
    /// Never answers INEED (v2.0).
    IgnoreIneed,
    /// Relays every message `delay_ns` late.
    DelayForwards,
    /// Sends every topic peer, every heartbeat, an IHAVE of `spam_ids` ids it does not have.
    SpamIhave,
    /// Sends every topic peer, every heartbeat, `spam_ids` messages of `spam_size` bytes
    /// that fail validation (a bad signature, or rejected by the application).
    SpamInvalid,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adversary {
    pub node: u32,
    pub behaviour: Misbehaviour,
    #[serde(default)]
    pub delay_ns: Time,
    #[serde(default)]
    pub spam_ids: usize,
    #[serde(default)]
    pub spam_size: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "kebab-case")]
pub enum Fault {
    /// The node is down during [from_ns, until_ns) (until the end when None): it sends and
    /// receives nothing, its peers drop it from their meshes, and it comes back with an
    /// empty state (a restart) and reconnects.
    Down {
        node: u32,
        from_ns: Time,
        until_ns: Option<Time>,
    },
    /// During [start_ns, end_ns) nothing crosses between nodes of different groups;
    /// `groups[i]` lists the nodes of group i (nodes not listed are in group 0).
    Partition {
        groups: Vec<Vec<u32>>,
        start_ns: Time,
        end_ns: Time,
    },
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "kebab-case")]
pub enum LatencyModel {
    Constant { ns: Time },
    Uniform { min_ns: Time, max_ns: Time },
    Normal { mean_ns: Time, std_ns: Time },
    Lognormal { median_ns: Time, sigma: f64 },
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// One-way propagation latency of each link, drawn once per link.
    pub latency: LatencyModel,
    /// Extra per-RPC delay, uniform in [0, jitter]; never reorders one connection.
    #[serde(default)]
    pub jitter_ns: Time,
    /// Probability that a TCP segment is lost (costs a retransmission delay), unless
    /// the caller gives a loss per link.
    #[serde(default)]
    pub loss: f64,
    /// TCP initial congestion window in segments (Linux: 10); 0 = no slow start.
    #[serde(default)]
    pub initial_window_segments: u64,
    /// After an idle period longer than the retransmission timeout a connection's
    /// window falls back towards the initial one (Linux's
    /// `net.ipv4.tcp_slow_start_after_idle`, on by default).
    #[serde(default = "yes")]
    pub slow_start_after_idle: bool,
    /// quic-go's pacer on every connection (`network.rs`); needs the window.
    #[serde(default)]
    pub pacing: bool,
    /// How a node's uplink serves its connections.
    #[serde(default)]
    pub uplink_sharing: UplinkSharing,
    /// How a node's limited downlink serves the connections arriving on it.
    #[serde(default)]
    pub downlink_sharing: DownlinkSharing,
    /// Bytes per connection that the transport takes from the outbound queue before
    /// they are sent (yamux's initial stream window, 256 KiB); 0: an RPC leaves the
    /// queue only when its writing starts.
    #[serde(default = "default_send_buffer")]
    pub send_buffer_bytes: u64,
    /// Round trips a connection of the topology takes, from the dial at time 0, before
    /// its dialer sends the hello (its subscriptions); the listener's end is up one
    /// latency later. 0: both ends send their hello at time 0.
    #[serde(default)]
    pub connect_round_trips: u64,
    /// Per-node uplink capacity in bit/s; 0 means unlimited. One entry per node.
    pub upload_bps: Vec<u64>,
    /// Per-node downlink capacity in bit/s; 0 means unlimited. One entry per node.
    pub download_bps: Vec<u64>,
    /// Per-node CPU time to validate one received message.
    pub cpu_per_message_ns: Vec<Time>,
    /// Where nodes are and what their access links add, for links between any two nodes:
    /// connections opened during the run, and the initial ones unless the caller gives
    /// per-edge values. None: latency drawn from `latency`, loss `loss`.
    #[serde(default)]
    pub placement: Option<Placement>,
    /// Groups of nodes behind one IP address (peer scoring's P6); everyone else has an
    /// address of their own.
    #[serde(default)]
    pub shared_ips: Vec<Vec<u32>>,
}

/// How a node's uplink is shared by its connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UplinkSharing {
    /// Connections with data are served in turn, a chunk each: the kernel's TCP flows
    /// through a FIFO qdisc share the link about equally (measured on the testbed).
    #[default]
    Fair,
    /// RPCs are written whole, in the order they were queued across connections: one
    /// FIFO interface queue.
    Fifo,
    /// Each connection releases what its congestion window allows into one FIFO queue
    /// of the uplink; acknowledgements return a round trip after the bytes left
    /// (`window.rs`): TCP or QUIC flows through a FIFO qdisc or link.
    Window,
    /// Shadow's network stack (its legacy TCP and default `interface_qdisc = "fifo"`):
    /// windows as `Window`, grown by every acknowledged byte, and one queue in the order
    /// the bytes were written across connections (`uplink_window.rs`).
    Shadow,
}

/// How a node's limited downlink is shared by the connections arriving on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DownlinkSharing {
    /// The connections being read share it equally (`downlink.rs`): the fluid form of
    /// their packets interleaving in a packet FIFO or in queues per flow.
    #[default]
    Fair,
    /// Whole RPCs one after the other, in the order their last bytes arrived; an idle
    /// downlink is taken to have read an RPC while it arrived (`Network::read`).
    Fifo,
    /// One FIFO of the pieces that congestion windows release (every uplink sharing but
    /// `Fifo`; `Fair` then serves windows in turns): each piece is acknowledged once the
    /// downlink has read it, and acknowledgements coming back wait behind the bytes
    /// queued in their sender's downlink (`downlink_packets.rs`).
    Packets,
}

impl UplinkSharing {
    /// True if connections release into the uplink what their congestion windows allow.
    pub fn uses_windows(self) -> bool {
        matches!(self, Self::Window | Self::Shadow)
    }
}

/// yamux's initial stream window (go-yamux `const.go`: `initialStreamWindow`).
pub const YAMUX_INITIAL_WINDOW: u64 = 256 * 1024;

fn default_send_buffer() -> u64 {
    YAMUX_INITIAL_WINDOW
}

fn yes() -> bool {
    true
}

/// Per-node geography and access-link quality (the scenario's regions and classes).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// Region of each node (index into `region_latency_ns`); empty without regions, when
    /// the base latency is drawn from `NetworkConfig::latency`.
    #[serde(default)]
    pub region: Vec<u32>,
    /// One-way latency from region i to region j.
    #[serde(default)]
    pub region_latency_ns: Vec<Vec<Time>>,
    /// Latency each node's access link adds to all its links.
    pub added_latency_ns: Vec<Time>,
    /// Segment loss each node's access link adds to all its links.
    pub added_loss: Vec<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Router {
    Floodsub,
    Gossipsub,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Version {
    #[serde(rename = "1.0")]
    V1_0,
    #[serde(rename = "1.1")]
    V1_1,
    #[serde(rename = "1.2")]
    V1_2,
    /// 1.2 plus the extensions control message (`/meshsub/1.3.0`, go v0.17.0
    /// gossipsub_feat.go:GossipSubDefaultFeatures).
    #[serde(rename = "1.3")]
    V1_3,
    #[serde(rename = "2.0")]
    V2_0,
}

/// v2.0: whether the lazy-push coin (D_announce / D per mesh peer) applies to a
/// publisher's own messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnnounceOwn {
    /// As for relayed messages: each mesh peer gets an IANNOUNCE with probability
    /// D_announce / D (the v2.0 fork, ppopth/go-libp2p-pubsub@cfecb8a `gossipsub.go:Publish`).
    #[default]
    Coin,
    /// The full message to every mesh peer unless D_announce >= D (libp2p specs PR #653).
    Eager,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signing {
    StrictSign,
    StrictNoSign,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MessageIdKind {
    /// go-libp2p-pubsub's `from || seqno`: 38 + 8 = 46 bytes with Ed25519 peer ids.
    Go,
    /// Ethereum's 20-byte truncated SHA-256.
    Ethereum,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct ProtocolConfig {
    pub router: Router,
    pub version: Version,
    pub D: usize,
    pub D_lo: usize,
    pub D_hi: usize,
    pub D_lazy: usize,
    pub D_score: usize,
    pub D_out: usize,
    pub heartbeat_ns: Time,
    pub heartbeat_initial_delay_ns: Time,
    pub history_length: usize,
    pub history_gossip: usize,
    pub gossip_factor: f64,
    pub fanout_ttl_ns: Time,
    pub seen_ttl_ns: Time,
    pub flood_publish: bool,
    pub prune_backoff_ns: Time,
    pub unsubscribe_backoff_ns: Time,
    /// Backoff entries are cleared only every this many heartbeats...
    pub backoff_clear_ticks: u64,
    /// ...once they expired more than this many heartbeats ago.
    pub backoff_slack_ticks: u64,
    pub max_ihave_length: usize,
    pub max_ihave_messages: usize,
    pub gossip_retransmission: u32,
    pub iwant_followup_ns: Time,
    /// Per-peer outbound queue, in RPCs (go: 32).
    pub peer_outbound_queue: usize,
    /// Messages waiting for validation before new ones are dropped (go: 32).
    pub validate_queue: usize,
    pub signing: Signing,
    pub message_id: MessageIdKind,
    /// Length in bytes of the topic strings carried on the wire.
    pub topic_name_len: usize,
    /// v1.2: send IDONTWANT for messages with at least this many data bytes.
    #[serde(default)]
    pub idontwant_threshold: u64,
    /// v2.0: mesh peers that get an IANNOUNCE instead of the message, out of D.
    #[serde(default)]
    pub D_announce: usize,
    /// v2.0: how long to wait for a message after an INEED before asking the next
    /// announcer.
    #[serde(default)]
    pub ineed_timeout_ns: Time,
    /// v2.0: how a publisher sends its own message to its mesh (default `coin`).
    #[serde(default)]
    pub announce_own: AnnounceOwn,
    /// v1.2+: send IDONTWANT for the node's own messages when it publishes. None: the
    /// version's reference (1.2: go v0.17.0 does; 2.0: the v2.0 fork does not).
    #[serde(default)]
    pub idontwant_on_publish: Option<bool>,
    /// v1.2+: the IDONTWANT sent on receipt goes to the sender too. None: the version's
    /// reference (1.2: go v0.17.0 skips it; 2.0: the v2.0 fork includes it).
    #[serde(default)]
    pub idontwant_to_sender: Option<bool>,
    /// v1.1 direct peers: pairs of connected nodes that are explicit peers of each other.
    #[serde(default)]
    pub direct_peers: Vec<(u32, u32)>,
    /// v1.1 peer exchange (go's `WithPeerExchange`): PRUNEs carry other topic peers, and
    /// the pruned node dials them.
    #[serde(default)]
    pub peer_exchange: bool,
    /// Peers offered in one PRUNE, and dialed from one (go: 16).
    #[serde(default = "default_prune_peers")]
    pub prune_peers: usize,
    /// Peer scoring; None = off, as in go without `WithPeerScore`.
    #[serde(default)]
    pub score: Option<ScoreConfig>,
}

fn default_prune_peers() -> usize {
    16
}

impl ProtocolConfig {
    /// IDONTWANT for own messages on publish: go v0.17.0 (`topic.go:validate`, since
    /// v0.14.0) yes; the v2.0 fork (`topic.go:Publish`) no.
    pub fn idontwant_on_publish(&self) -> bool {
        self.idontwant_on_publish
            .unwrap_or(self.version < Version::V2_0)
    }

    /// Pending GRAFT/PRUNE retries and a heartbeat's IHAVE for a peer go out in an RPC of
    /// their own, just before the RPC that finds them: go v0.17.0 (`gossipsub.go:sendRPC`,
    /// "Any pending control messages?"). go v0.1.1 (v1.0) and the v2.0 fork
    /// (`sendRPC`, "piggyback control message retries") add them to that RPC instead.
    pub fn separates_pending_control(&self) -> bool {
        self.version >= Version::V1_1 && self.version < Version::V2_0
    }

    /// IDONTWANT on receipt back to the sender too: go v0.17.0 (`gossipsub.go:Preprocess`,
    /// since v0.14.0) no; the v2.0 fork (`gossipsub.go:PreValidation`) yes.
    pub fn idontwant_to_sender(&self) -> bool {
        self.idontwant_to_sender
            .unwrap_or(self.version >= Version::V2_0)
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Also record every payload receipt, duplicates included.
    #[serde(default)]
    pub receipts: bool,
    /// Also count, per message, the payload copies and the ids naming it that nodes
    /// sent (the `message_traffic` table), so traffic can be reported for some
    /// messages only.
    #[serde(default)]
    pub message_traffic: bool,
    /// Full: a row per first receipt. Aggregate: per-message and per-node aggregates
    /// and histograms instead (see `aggregate.rs`), for runs too large for the rows.
    #[serde(default)]
    pub mode: OutputMode,
    /// Aggregate mode: messages intended before this (the warm-up) are left out of the
    /// node totals and histograms.
    #[serde(default)]
    pub measure_from_ns: Time,
    /// Aggregate mode: how long after its publication a message spreads; a receiver down
    /// during any of it is not expected to receive it. Default: history_length
    /// heartbeats (the message-cache window).
    #[serde(default)]
    pub message_lifetime_ns: Option<Time>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputMode {
    #[default]
    Full,
    Aggregate,
}

impl Placement {
    fn check(&self, nodes: u32) -> Result<(), EngineError> {
        let n = nodes as usize;
        let regions = self.region_latency_ns.len();
        if self.added_latency_ns.len() != n || self.added_loss.len() != n {
            return Err(EngineError::config(
                "network.placement",
                format!("placement needs one entry per node ({n})"),
            ));
        }
        if !(self.region.is_empty() || self.region.len() == n) {
            return Err(EngineError::config(
                "network.placement.region",
                format!("placement.region needs {n} entries"),
            ));
        }
        if self
            .region_latency_ns
            .iter()
            .any(|row| row.len() != regions)
            || self.region.iter().any(|&r| r as usize >= regions)
        {
            return Err(EngineError::config(
                "network.placement.region_latency_ns",
                "placement regions do not match the latency matrix",
            ));
        }
        Ok(())
    }
}

impl Config {
    /// Per node, the intervals [from, until) it was out of a topic, as (from, until,
    /// topic); until FOREVER when it never rejoined. Changes that change nothing (joining
    /// a topic the node is in) are ignored.
    pub fn unsubscribed(&self) -> Vec<Vec<(Time, Time, u16)>> {
        let mut changes = self.subscription_changes.clone();
        changes.sort_by_key(|c| (c.node, c.topic, c.at_ns));
        let mut out = vec![Vec::new(); self.nodes as usize];
        let mut left: Option<(u32, u16, Time)> = None;
        for c in changes {
            if let Some((node, topic, from)) = left {
                if (node, topic) != (c.node, c.topic) {
                    out[node as usize].push((from, FOREVER, topic));
                    left = None;
                }
            }
            match (left, c.subscribe) {
                (None, false) => left = Some((c.node, c.topic, c.at_ns)),
                (Some((node, topic, from)), true) => {
                    out[node as usize].push((from, c.at_ns, topic));
                    left = None;
                }
                _ => {}
            }
        }
        if let Some((node, topic, from)) = left {
            out[node as usize].push((from, FOREVER, topic));
        }
        out
    }

    pub fn from_json(text: &str) -> Result<Self, EngineError> {
        let config: Config =
            serde_json::from_str(text).map_err(|e| EngineError::config("", e.to_string()))?;
        config.check()?;
        Ok(config)
    }

    /// Invariants the engine relies on (user-facing checks happen in Python first).
    pub fn check(&self) -> Result<(), EngineError> {
        let n = self.nodes as usize;
        let net = &self.network;
        if self.nodes == 0 {
            return Err(EngineError::config("nodes", "nodes must be >= 1"));
        }
        let cpu = &self.cpu;
        if cpu.nodes_per_host == 0 || cpu.cores == 0 {
            return Err(EngineError::config(
                "cpu",
                "nodes_per_host and cores must be >= 1",
            ));
        }
        if !(cpu.sigma.is_finite() && cpu.sigma >= 0.0) {
            return Err(EngineError::config("cpu.sigma", "sigma must be >= 0"));
        }
        for (name, sigma) in cpu.sigmas() {
            if !(sigma.is_finite() && sigma >= 0.0) {
                return Err(EngineError::config(
                    &format!("cpu.{name}"),
                    format!("{name} must be >= 0"),
                ));
            }
        }
        if cpu.event_loop && cpu.nodes_per_host <= cpu.cores {
            return Err(EngineError::config(
                "cpu.event_loop",
                "event_loop is modelled on time-sliced hosts only: set nodes_per_host above cores, or event_loop = false",
            ));
        }
        if cpu.sysmon && cpu.nodes_per_host <= cpu.cores {
            return Err(EngineError::config(
                "cpu.sysmon",
                "sysmon is modelled on time-sliced hosts only: set nodes_per_host above cores, or sysmon = false",
            ));
        }
        for (name, share) in [
            ("send_loop_syscall_share", cpu.send_loop_syscall_share),
            ("recv_loop_syscall_share", cpu.recv_loop_syscall_share),
        ] {
            if !(share > 0.0 && share <= 1.0) {
                return Err(EngineError::config(
                    &format!("cpu.{name}"),
                    format!("{name} is a part of a goroutine's CPU: set it above 0 and at most 1"),
                ));
            }
        }
        if cpu.per_sysmon_round_ns > 0 && !cpu.sysmon {
            return Err(EngineError::config(
                "cpu.per_sysmon_round_ns",
                "per_sysmon_round_ns is the cost of a sysmon round: set sysmon = true, or per_sysmon_round_ns = 0",
            ));
        }
        if cpu.event_loop && !self.faults.is_empty() {
            return Err(EngineError::config(
                "cpu.event_loop",
                "event_loop does not model nodes going down yet: remove the faults, or event_loop = false",
            ));
        }
        if cpu.time_slice_ns == Some(0) {
            return Err(EngineError::config(
                "cpu.time_slice_ns",
                "time_slice_ns must be > 0",
            ));
        }
        if net.downlink_sharing == DownlinkSharing::Packets
            && net.uplink_sharing == UplinkSharing::Fifo
        {
            return Err(EngineError::config(
                "network.downlink_sharing",
                "downlink_sharing = \"packets\" reads the pieces that windows release, and \
                 uplink_sharing = \"fifo\" writes whole RPCs: set uplink_sharing = \"fair\", \
                 \"window\" or \"shadow\"",
            ));
        }
        for (name, len) in [
            ("upload_bps", net.upload_bps.len()),
            ("download_bps", net.download_bps.len()),
            ("cpu_per_message_ns", net.cpu_per_message_ns.len()),
        ] {
            if len != n {
                return Err(EngineError::config(
                    &format!("network.{name}"),
                    format!("network.{name} has {len} entries for {n} nodes"),
                ));
            }
        }
        for a in &self.adversaries {
            if a.node >= self.nodes {
                return Err(EngineError::config(
                    "adversaries",
                    format!("adversary node {} >= {} nodes", a.node, self.nodes),
                ));
            }
        }
        for f in &self.faults {
            let listed: Vec<u32> = match f {
                Fault::Down { node, .. } => vec![*node],
                Fault::Partition { groups, .. } => groups.iter().flatten().copied().collect(),
            };
            if let Some(n) = listed.iter().find(|&&n| n >= self.nodes) {
                return Err(EngineError::config(
                    "faults",
                    format!("fault names node {n} but there are {} nodes", self.nodes),
                ));
            }
        }
        if let Some(placement) = &net.placement {
            placement.check(self.nodes)?;
        }
        if let Some(n) = net.shared_ips.iter().flatten().find(|&&n| n >= self.nodes) {
            return Err(EngineError::config(
                "network.shared_ips",
                format!(
                    "shared_ips names node {n} but there are {} nodes",
                    self.nodes
                ),
            ));
        }
        if let Some(c) = self
            .subscription_changes
            .iter()
            .find(|c| c.node >= self.nodes || c.topic >= self.topics)
        {
            return Err(EngineError::config(
                "subscription_changes",
                format!("a subscription change names node {} / topic {} but there are {} nodes and {} topics",
                c.node, c.topic, self.nodes, self.topics),
            ));
        }
        if !(0.0..1.0).contains(&net.loss) {
            return Err(EngineError::config(
                "network.loss",
                format!("network.loss must be in [0, 1), got {}", net.loss),
            ));
        }
        if self.topics == 0 || self.topics > 64 {
            return Err(EngineError::config(
                "topics",
                format!("topics must be in 1..=64, got {}", self.topics),
            ));
        }
        if self.output.mode == OutputMode::Aggregate && self.output.receipts {
            return Err(EngineError::config(
                "output.receipts",
                "output.receipts (a row per payload copy) contradicts the aggregate mode",
            ));
        }
        if let Some(partial) = &self.partial {
            partial.check(self)?;
        }
        let p = &self.protocol;
        if p.router == Router::Gossipsub {
            if !(p.D_lo <= p.D && p.D <= p.D_hi) {
                return Err(EngineError::config("protocol.D", "need D_lo <= D <= D_hi"));
            }
            if p.heartbeat_ns == 0 {
                return Err(EngineError::config(
                    "protocol.heartbeat_ns",
                    "heartbeat must be > 0",
                ));
            }
            if p.peer_outbound_queue == 0 {
                return Err(EngineError::config(
                    "protocol.peer_outbound_queue",
                    "peer_outbound_queue must be >= 1",
                ));
            }
            if p.backoff_clear_ticks == 0 {
                return Err(EngineError::config(
                    "protocol.backoff_clear_ticks",
                    "backoff_clear_ticks must be >= 1",
                ));
            }
            if p.history_gossip > p.history_length || p.history_length == 0 {
                return Err(EngineError::config(
                    "protocol.history_length",
                    "need 1 <= history_length and history_gossip <= history_length",
                ));
            }
        }
        Ok(())
    }
}

/// Peer scoring parameters (gossipsub v1.1); the score itself is `router/score.rs`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreConfig {
    pub gossip_threshold: f64,
    pub publish_threshold: f64,
    pub graylist_threshold: f64,
    pub accept_px_threshold: f64,
    pub opportunistic_graft_threshold: f64,
    pub topic_score_cap: f64,
    pub topic_weight: f64,
    pub time_in_mesh_weight: f64,
    pub time_in_mesh_quantum_ns: Time,
    pub time_in_mesh_cap: f64,
    pub first_message_deliveries_weight: f64,
    pub first_message_deliveries_decay: f64,
    pub first_message_deliveries_cap: f64,
    pub mesh_message_deliveries_weight: f64,
    pub mesh_message_deliveries_decay: f64,
    pub mesh_message_deliveries_threshold: f64,
    pub mesh_message_deliveries_cap: f64,
    pub mesh_message_deliveries_activation_ns: Time,
    pub mesh_message_deliveries_window_ns: Time,
    pub mesh_failure_penalty_weight: f64,
    pub mesh_failure_penalty_decay: f64,
    pub invalid_message_deliveries_weight: f64,
    pub invalid_message_deliveries_decay: f64,
    pub behaviour_penalty_weight: f64,
    pub behaviour_penalty_threshold: f64,
    pub behaviour_penalty_decay: f64,
    pub decay_interval_ns: Time,
    pub decay_to_zero: f64,
    /// A GRAFT this soon after our PRUNE costs an extra behaviour penalty.
    pub graft_flood_threshold_ns: Time,
    pub opportunistic_graft_ticks: u64,
    pub opportunistic_graft_peers: usize,
    /// P5: weight of the application score, and the scores of given nodes.
    #[serde(default)]
    pub app_specific_weight: f64,
    #[serde(default)]
    pub app_specific: Vec<AppScore>,
    /// P6: weight of the surplus of peers behind one IP address, and the peers tolerated.
    #[serde(default)]
    pub ip_colocation_factor_weight: f64,
    #[serde(default = "one")]
    pub ip_colocation_factor_threshold: f64,
    /// How long the score of a disconnected peer is kept (unless positive).
    #[serde(default = "one_hour")]
    pub retain_score_ns: Time,
}

fn one_hour() -> Time {
    3_600_000_000_000
}

fn one() -> f64 {
    1.0
}

/// Every node gives `nodes` this application-specific score.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppScore {
    pub nodes: Vec<u32>,
    pub score: f64,
}
