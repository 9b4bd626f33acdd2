//! gossiplab's engine: a deterministic discrete-event simulator of libp2p pubsub.
//!
//! It takes a resolved experiment (`Config`, the topology's edges and the publish
//! `Schedule`) and produces event tables (`Output`). It knows nothing about files,
//! Python or plots; the `gossiplab-python` crate exposes it to the Python package.
//!
//! Same config, edges and schedule: byte-identical output, on any machine.

pub mod aggregate;
pub mod config;
pub mod control;
pub mod error;
mod exchange;
mod faults;
mod gossipsub;
pub mod histogram;
pub mod inspect;
mod lazy;
pub mod links;
pub mod mcache;
pub mod network;
pub mod output;
pub mod queue;
pub mod rng;
pub mod rpc;
pub mod score;
mod seen;
pub mod sim;
mod subscriptions;
pub mod transport;
pub mod wire;

pub use config::{Config, Time};
pub use error::EngineError;
pub use output::Output;
pub use sim::{EdgeProperties, Message, Schedule, Simulation};
