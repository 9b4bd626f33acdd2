//! gossiplab's engine: a deterministic discrete-event simulator of libp2p pubsub.
//!
//! It takes a resolved experiment (`Config`, the topology's edges and the publish
//! `Schedule`) and produces event tables (`Output`). It knows nothing about files,
//! Python or plots; the `gossiplab-python` crate exposes it to the Python package.
//!
//! Same config, edges and schedule: byte-identical output, on any machine.
//!
//! Layout: the network side (`sim`, `setup`, `receive`, `send`, `transport`,
//! `network`, `links`, `queue`, `faults`, `dial`, `topics`) moves RPCs and runs each
//! node's host side (`node`, `seen`); the routers (`router/`) decide what a node sends
//! and act only through their outbox (`outbox`). Both read the kind table (`control`).

pub mod aggregate;
pub mod chan;
pub mod config;
pub mod control;
pub mod cpu;
pub mod cpu_use;
mod dial;
pub mod downlink;
mod downlink_packets;
pub mod error;
mod event_loop;
mod faults;
pub mod goroutines;
mod group;
pub mod histogram;
pub mod inputs;
pub mod inspect;
pub mod links;
pub mod network;
mod node;
mod outbox;
pub mod output;
mod packet_reads;
pub mod partial;
pub mod queue;
mod receive;
pub mod rng;
mod router;
pub mod rpc;
mod seen;
mod send;
mod setup;
pub mod sim;
pub mod slices;
mod split;
pub mod stream_window;
mod subscription;
mod sysmon;
mod topics;
pub mod transport;
mod uplink_window;
pub mod window;
pub mod wire;

pub use config::{Config, Time};
pub use error::EngineError;
pub use inputs::{EdgeProperties, Message, Schedule};
pub use output::Output;
pub use router::{mcache, score};
pub use sim::Simulation;
