"""Type stub of the engine extension (`crates/python`): a deterministic simulator of
libp2p pubsub. Arrays cross the boundary as little-endian byte strings."""

from typing import Any

__version__: str

class EngineError(ValueError):
    """The engine refused its inputs; `field` names the setting or array at fault."""

    field: str
    """The config setting's dotted path (e.g. "network.loss") or the input array's name
    ("edges", "schedule", "edge_latency", "edge_loss"); "" when the JSON does not parse."""
    reason: str
    """The message without the "engine config:" prefix."""

class ConfigError(EngineError):
    """A config setting is out of range or contradicts another."""

class InputError(EngineError):
    """The edges, schedule or per-edge arrays break an engine invariant."""

class Engine:
    """A simulation in progress."""

    def __new__(
        cls,
        config_json: str,
        edges: bytes,
        t_intended: bytes,
        publisher: bytes,
        size: bytes,
        topic: bytes,
        batch: bytes,
        edge_latency: bytes | None = None,
        edge_loss: bytes | None = None,
    ) -> Engine:
        """`edges`: (dialer, listener) u32 pairs; schedule columns t_intended u64,
        publisher u32, size u32, topic u16, batch u32; optionally a one-way latency (u64
        ns) and a loss (f64) per edge and direction. Raises ConfigError or InputError."""

    def run_until(self, t_ns: int) -> bool:
        """Run up to simulated time `t_ns` without holding the GIL; True once finished."""

    @property
    def now(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def events(self) -> int:
        """Events processed so far."""

    def mesh(self, node: int, topic: int) -> list[int]:
        """Peers in `node`'s mesh for `topic`, sorted."""

    def live_state(self) -> dict[str, int]:
        """Entries of per-message state held now (seen cache, message cache, ...)."""

    def tables(self) -> dict[str, Any]:
        """The event tables as {table: {column: little-endian bytes}}, plus
        "kind_names": the traffic kinds' names in column order. When the scenario charges
        CPU, "resources" has node, t_ns and cpu_ns (cumulative CPU time) per node and
        whole second and at the end."""
