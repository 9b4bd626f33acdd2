//! Why the engine refuses its inputs.
//!
//! The Python package checks a scenario before the engine sees it, so these errors
//! mean the caller broke a contract; they still say which input and why, so that the
//! binding can raise a typed exception naming it.

use std::fmt;

/// The engine refused a config or its input arrays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineError {
    /// The config does not parse, or a setting is out of range or contradicts another.
    /// `field` is the setting's dotted path in the engine config (e.g. `network.loss`),
    /// empty when the JSON itself does not parse.
    Config { field: String, message: String },
    /// The topology, publish schedule or per-edge arrays break an invariant the engine
    /// relies on. `input` names the array (`edges`, `schedule`, `edge_loss`, ...).
    Input { input: String, message: String },
}

impl EngineError {
    pub fn config(field: &str, message: impl Into<String>) -> Self {
        Self::Config {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn input(input: &str, message: impl Into<String>) -> Self {
        Self::Input {
            input: input.into(),
            message: message.into(),
        }
    }

    /// The config field or input array at fault.
    pub fn field(&self) -> &str {
        match self {
            Self::Config { field, .. } => field,
            Self::Input { input, .. } => input,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Self::Config { message, .. } | Self::Input { message, .. } => message,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config { message, .. } => write!(f, "engine config: {message}"),
            Self::Input { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for EngineError {}
