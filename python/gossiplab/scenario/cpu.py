"""[cpu]: hosts with cores their nodes share, and what CPU work costs (the model's).

The engine places each cost where go-libp2p-pubsub v0.17.0 spends it
(`crates/engine/src/cpu.rs`): reading an RPC in the peer's reading goroutine (and waking
that goroutine up when it waited on the network), validating
a copy in the validation pipeline, writing an RPC in the peer's writer goroutine (one at
a time, so a busy host's 32-RPC outbound queues overflow), signing a publication.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from gossiplab.scenario.base import MAX_U32, Section
from gossiplab.scenario.presets import over_preset
from gossiplab.units import Duration, parse_size

US = 1_000

# Costs measured on real go-libp2p v0.51.0 / go-libp2p-pubsub v0.17.0 nodes (TCP, noise,
# yamux) on this project's 2-core machine: docs/network-calibration.md, "CPU costs".
# `per_copy` depends on the signing policy: without signatures nothing is verified.
# Unconfined nodes ran with GOMAXPROCS = 2, the machine's CPUs.
MEASURED: dict[str, int] = {
    "per_rpc_received": 0,
    "per_kb_received": 6 * US,
    # Two read syscalls of 31 µs: the 33.4 µs per read fitted with no cost per write,
    # less the 2.5 µs per read the 4 µs per write below takes (docs/network-calibration.md).
    "per_read_wakeup": 62 * US,
    "per_node_wakeup": 0,
    # The profiles' write path (write syscall, Noise, yamux) is 9.0-9.3 µs per write
    # syscall at 100 msg/s, one per RPC; less the 6 µs per kB of the ~0.9 kB written.
    "per_rpc_sent": 4 * US,
    "per_kb_sent": 6 * US,
    "per_publish": 29 * US,
    # The kernel's network work on the nodes' core (the TCP stack, and the emulated
    # network's forwarding to the delay stage) runs in their syscalls and counts in their
    # CPU time on the calibration machine (no IRQ time accounting): the costs above hold
    # it already (docs/network-calibration.md, "The kernel's network work").
    "per_segment_kernel": 0,
}
# A node's threads block this many times (voluntary context switches) per wake-up of the
# node, measured with the kernel's scheduler tracepoint on the one-P calibration runs
# (bench/wakeup_switches.py, 3.00-3.93 per run): the node's thread in the blocking
# netpoll, sysmon's deep sleep, and sysmon's 20 µs sleeps while the node runs
# (runtime/proc.go:sysmon), 1.1-2.1 per wake-up. The calibration fits the CPU to every
# voluntary switch, so a wake-up costs this many switches.
SWITCHES_PER_NODE_WAKEUP = 3.24
# Nodes confined to one CPU run with GOMAXPROCS = 1 (runtime/os_linux.go:getCPUCount
# counts the affinity mask). Their goroutine hand-offs wake no other thread: with one P
# there is no idle P for runtime/proc.go:wakep (called by ready) to start an M for
# (pidlegetSpinning finds none: the waker holds the only P). Their threads block when
# the node has nothing to run (runtime/proc.go:findRunnable, the blocking netpoll), and
# the CPU beyond bytes, signatures and writes fits voluntary context switches (11.0 µs
# each, + 1.75 µs per copy received or sent) better than read syscalls: the node's
# wake-up is SWITCHES_PER_NODE_WAKEUP of them (bench/cpu_calibration.py), and replaces
# the reader's (docs/network-calibration.md, "On one P").
MEASURED_ONE_P: dict[str, int] = {
    **MEASURED,
    "per_read_wakeup": 0,
    "per_node_wakeup": round(SWITCHES_PER_NODE_WAKEUP * 11_000),
    "per_rpc_received": 1_750,
    "per_rpc_sent": MEASURED["per_rpc_sent"] + 1_750,
}
# The same nodes with pubsub's event loop modelled (`event_loop`, on a time-sliced host of
# one core): each cost on the goroutine that pays it in go, split into a part per item and
# a part per turn of the goroutine (its switch, its state back into the caches: a busy
# goroutine takes many items a turn and pays less per item). Fitted on one hour's
# profiles by goroutine and Go execution traces of the cliff file at 80-200 msg/s
# (bench/cpu_fit_turns.py; docs/network-calibration.md, "Per goroutine turn"), the
# collector's and the testbed's tracer's work apportioned to the goroutines by their CPU:
# the loop 3.59 µs per RPC it handles (pubsub.go:handleIncomingRPC), 3.72 µs per message
# it publishes (publishMessage) and 0.98 µs per peer it forwards it to
# (gossipsub.go:sendRPC), 4.48 µs per turn; yamux's recvLoop (read syscalls, decryption)
# 1.03 µs per kB, 9.27 µs per turn; the readers (handleNewStream: the stream's buffer,
# decoding) 1.88 µs per RPC, 0.68 µs per turn; the writers 1.37 µs per turn, their
# 1.54 µs per RPC charged with the sendLoop's 2.90 µs per RPC and 4.36 µs per kB, the
# sendLoop 5.66 µs per turn; the validation worker 44.69 µs per copy, 28.72 µs per turn;
# the publisher 94.3 µs per publication (topic.go:Publish signs, then ValidateLocal checks
# the signature just made). What is left, the runtime's work on a node that was idle, is
# the node's wake-up, fitted so that the model's nodes, with their own counts, use the
# CPU the real nodes of that hour's ten one-P calibration runs used (bench/cpu_fit_wakeup.py).
MEASURED_ONE_P_LOOP: dict[str, int] = {
    **MEASURED,
    "per_read_wakeup": 0,
    "per_node_wakeup": 11 * US,
    "per_rpc_received": 1_880,
    "per_kb_received": 1_030,
    "per_rpc_sent": 4_440,
    "per_kb_sent": 4_360,
    "per_rpc_loop": 3_590,
    "per_publish_loop": 3_720,
    "per_forward_loop": 980,
    "per_reader_turn": 680,
    "per_writer_turn": 1_370,
    "per_validator_turn": 28_720,
    "per_loop_turn": 4_480,
    "per_send_loop_turn": 5_660,
    "per_recv_loop_turn": 9_270,
}
MEASURED_PER_COPY = {"strict-sign": 84 * US, "strict-no-sign": 0}
# A signature covers the whole marshalled message: checking one hashes it once (SHA-512
# in ed25519.Verify), after cloning and marshalling it (sign.go:verifyMessageSignature);
# a publication is marshalled and hashed twice to sign it (signMessage, ed25519.Sign),
# then checked as a copy is (validation.go:PushLocal). Per 1000 bytes, the slopes of
# testbed/gossipnode/signcost_test.go over 1-512 kB on this machine
# (docs/network-calibration.md, "Signatures and message ids by size"); nothing to
# hash unsigned.
MEASURED_PER_KB_COPY = {"strict-sign": 2_673, "strict-no-sign": 0}
MEASURED_PER_KB_PUBLISH = {"strict-sign": 6_447, "strict-no-sign": 0}
# The publication's cost at 1000 bytes (MEASURED's), less the 1 kB that per_kb_publish
# charges where it charges.
MEASURED_PER_PUBLISH = {
    signing: MEASURED["per_publish"] - per_kb for signing, per_kb in MEASURED_PER_KB_PUBLISH.items()
}
# A content-addressed id hashes the message's data (SHA-256 for protocol.message_id =
# "ethereum", testbed/gossipnode/params.go:ethereumMessageID): go computes it for each copy
# received, duplicates included (pubsub.go:shouldPush), and once per publication
# (validation.go:validate). Per 1000 bytes, the slope of testbed/gossipnode/
# msgidcost_test.go over 1-512 kB on this machine; go's own id (from + seqno) hashes
# nothing. At 1 kB (0.7 µs) it is inside the costs fitted there.
MEASURED_PER_KB_MESSAGE_ID = {"ethereum": 675, "go": 0}
# ed25519 in the validation worker on one P (validation.go:validateWorker), with the loop
# modelled, besides its per_validator_turn: without the loop the 84 µs also carries the
# loop's publishMessage. Measured on 1000-byte messages (44.69 µs), less the 1 kB that
# per_kb_copy charges.
MEASURED_PER_COPY_ONE_P_LOOP = {"strict-sign": 44_690 - 2_673, "strict-no-sign": 0}
# The publisher's CPU per publication on one P with the loop (topic.go:Publish), measured
# on 1000-byte messages (94.3 µs signed) less the 1 kB that per_kb_publish charges;
# unsigned, the same less one ed25519 signing and one verification (17.3 and 49.8 µs,
# `go test crypto/ed25519 -bench 'Signing|Verification'` on this machine).
MEASURED_PER_PUBLISH_ONE_P_LOOP = {"strict-sign": 94_300 - 6_447, "strict-no-sign": 27_200}
# The part of a yamux sendLoop's write and of a recvLoop's read inside the system call,
# by the real nodes' CPU profiles on one P (docs/network-calibration.md, "Per goroutine
# turn": 0.79-0.86 and 0.28-0.41 over six loads, pooled): where sysmon finds the P in a
# call and retakes it, which with the P handed to another thread delays the goroutine.
MEASURED_SYSCALL_SHARES = {"send_loop_syscall_share": 0.82, "recv_loop_syscall_share": 0.34}
COST_FIELDS = (
    "per_copy",
    "per_rpc_received",
    "per_kb_received",
    "per_read_wakeup",
    "per_node_wakeup",
    "per_rpc_sent",
    "per_kb_sent",
    "per_publish",
    "per_segment_kernel",
)

# The event loop's costs per item (pubsub.go): no sigma of their own.
LOOP_FIELDS = ("per_rpc_loop", "per_publish_loop", "per_forward_loop")

# Costs per goroutine turn (constant: no sigma of their own), and the goroutine each is of.
TURN_FIELDS = {
    "per_reader_turn": "reader",
    "per_writer_turn": "writer",
    "per_validator_turn": "validator",
    "per_loop_turn": "event loop",
    "per_send_loop_turn": "yamux sendLoop",
    "per_recv_loop_turn": "yamux recvLoop",
}

# The costs of goroutines the model has only with the event loop (pubsub's loop, yamux's
# sendLoop and recvLoop, the application reading its subscription).
EVENT_LOOP_FIELDS = (
    *LOOP_FIELDS,
    "per_loop_turn",
    "per_send_loop_turn",
    "per_recv_loop_turn",
    "per_app_message",
)

# The costs per 1000 bytes of a message (its signature, its id). per_kb_copy and
# per_kb_publish add to per_copy's and per_publish's mean and are drawn with their shape;
# per_kb_message_id is constant on a copy received.
MESSAGE_BYTES_FIELDS = ("per_kb_copy", "per_kb_publish", "per_kb_message_id")

# Every cost of the section, in ns: what `speed` divides.
EVERY_COST = (
    *COST_FIELDS,
    *MESSAGE_BYTES_FIELDS,
    *LOOP_FIELDS,
    *TURN_FIELDS,
    "per_sysmon_round",
    "per_app_message",
)


class CpuConfig(Section):
    # "measured": every cost not given is the one measured on real nodes (see MEASURED).
    costs: Literal["none", "measured"] = "none"
    # Consecutive node ids share a host; the host's cores serve its nodes' work in turn.
    nodes_per_host: int = Field(default=1, ge=1, le=MAX_U32)
    cores: int = Field(default=1, ge=1, le=1024)
    # Each validated copy (signature check, validators); added to network.cpu_per_message.
    per_copy: Duration = 0
    # Each validated copy, per 1000 bytes of its message: the signature check hashes the
    # whole message (sign.go:verifyMessageSignature). Added to per_copy.
    per_kb_copy: Duration = 0
    # Reading an RPC: per RPC and per 1000 bytes (decryption, framing, decoding). With
    # the event loop the bytes' part is yamux's recvLoop's, the RPC's the stream
    # reader's (decoding).
    per_rpc_received: Duration = 0
    per_kb_received: Duration = 0
    # Each time the goroutine reading a peer's connection (with the event loop, yamux's
    # recvLoop) wakes up from waiting on the network (read syscalls, netpoller,
    # scheduler), shared by the RPCs it then reads before it waits.
    per_read_wakeup: Duration = 0
    # Each time a node with nothing to run gets work (its thread woken from the blocking
    # netpoll), shared by all the work it does before it idles again.
    per_node_wakeup: Duration = 0
    per_rpc_sent: Duration = 0
    per_kb_sent: Duration = 0  # per 1000 bytes written (encryption, framing)
    per_publish: Duration = 0  # signing, plus the application's own work (e.g. a proof)
    # Per 1000 bytes of a publication's message: signing hashes it twice, and the
    # publisher checks its own signature (sign.go:signMessage). Added to per_publish.
    per_kb_publish: Duration = 0
    # Per 1000 bytes of each copy received, duplicates included, and of each publication:
    # computing a content-addressed message id (pubsub.go:shouldPush hashes the data for
    # protocol.message_id = "ethereum"). With the event loop in the loop, else with the read.
    per_kb_message_id: Duration = 0
    # The kernel's work per TCP segment a node sends (the TCP stack, and on the testbed the
    # emulated network's forwarding): charged with the writer's work.
    per_segment_kernel: Duration = 0
    # Each cost is a mean; sigma > 0 draws every piece of work from a lognormal of that mean.
    sigma: float = Field(default=0.0, ge=0, le=5)
    # A cost's own lognormal shape (0: constant); unset: `sigma`.
    sigma_per_copy: float | None = Field(default=None, ge=0, le=5)
    sigma_per_rpc_received: float | None = Field(default=None, ge=0, le=5)
    sigma_per_kb_received: float | None = Field(default=None, ge=0, le=5)
    sigma_per_read_wakeup: float | None = Field(default=None, ge=0, le=5)
    sigma_per_node_wakeup: float | None = Field(default=None, ge=0, le=5)
    sigma_per_rpc_sent: float | None = Field(default=None, ge=0, le=5)
    sigma_per_kb_sent: float | None = Field(default=None, ge=0, le=5)
    sigma_per_publish: float | None = Field(default=None, ge=0, le=5)
    sigma_per_segment_kernel: float | None = Field(default=None, ge=0, le=5)
    # A host whose nodes outnumber its cores runs them in time slices of this length;
    # unset: Linux's default for the host's cores (see `kernel_time_slice`).
    time_slice: Duration | None = Field(default=None, gt=0)
    # The host kernel's tick rate (CONFIG_HZ): without hrtick a slice that is over runs on
    # until the next tick or a wake-up on the core notices it (crates/engine/src/slices.rs).
    # 250: this machine's kernel, Debian's default.
    kernel_hz: Literal[100, 250, 300, 1000] = 250
    # The scheduler's HRTICK feature (off in Linux's default): a timer ends each slice on
    # time.
    hrtick: bool = False
    # pubsub's event loop: readers hand RPCs to one goroutine per node through a 32-slot
    # channel and stop reading while it is full; yamux stream windows then stop the
    # senders' writers (crates/engine/src/event_loop.rs). Time-sliced hosts only.
    event_loop: bool = False
    # Each node's Go runtime `sysmon` thread: it wakes every 20 us to 10 ms while the node
    # runs, and each wake-up lets the host's kernel pick again, where a node past its
    # share loses its core (crates/engine/src/sysmon.rs). Time-sliced hosts only;
    # `costs = "measured"` turns it on with the event loop.
    sysmon: bool = False
    # The CPU time of each sysmon round, on the node's core (constant). 0: rounds take no
    # time, their CPU being in the other costs.
    per_sysmon_round: Duration = 0
    # The part of a yamux sendLoop's write and of a recvLoop's read that is the system
    # call, where sysmon can find the node's P and retake it (the write comes at the end
    # of its work, the read at the start). 1: the whole piece. Real nodes' CPU profiles:
    # 0.82 and 0.34 (docs/network-calibration.md), which `costs = "measured"` sets with sysmon
    # and the event loop. With sysmon and the event loop only.
    send_loop_syscall_share: float = Field(default=1.0, gt=0, le=1)
    recv_loop_syscall_share: float = Field(default=1.0, gt=0, le=1)
    # The event loop's work per RPC it handles (pubsub.go:handleIncomingRPC).
    per_rpc_loop: Duration = 0
    # The event loop's work per message it delivers and forwards (pubsub.go:publishMessage),
    # besides per_forward_loop.
    per_publish_loop: Duration = 0
    # The event loop's work per peer it forwards a message to (gossipsub.go:sendRPC).
    per_forward_loop: Duration = 0
    # The application's work per message it reads from its subscription, in its own
    # goroutine (constant). go-libp2p-pubsub keeps 32 messages for a subscription whose
    # application is busy and drops the next as undeliverable (crates/engine/src/
    # subscription.rs). 0: the application only reads them, as the testbed's does.
    per_app_message: Duration = 0
    # Each turn of a goroutine (each time Go's scheduler runs it after it waited),
    # whatever it then does: the switch, its state back into the caches. Shared by the
    # items it takes in that turn, so a busy goroutine pays less per item. Time-sliced
    # hosts only (crates/engine/src/goroutines.rs, TurnCosts).
    per_reader_turn: Duration = 0
    per_writer_turn: Duration = 0
    per_validator_turn: Duration = 0
    per_loop_turn: Duration = 0
    per_send_loop_turn: Duration = 0
    per_recv_loop_turn: Duration = 0
    # Record the run-queue waits of these nodes' goroutines (goroutine_waits.parquet), to
    # set beside Go's execution traces of the same nodes ([testbed] go_trace,
    # bench/go_trace_schedule.py), and the nodes' own waits for a core ("node thread",
    # beside the kernel's: bench/preemptions.py). Time-sliced hosts only.
    record_waits: list[int] = Field(default_factory=list)
    # How fast the hosts run, against the machine the costs were measured on: every cost
    # (given or measured, and network.cpu_per_message) is divided by it. 2: twice as fast.
    speed: float = Field(default=1.0, gt=0, le=1000)

    @model_validator(mode="after")
    def _loop_costs_with_the_loop(self) -> CpuConfig:
        # Without the event loop these goroutines do not exist: a cost for them would be
        # silently unused.
        if self.event_loop:
            return self
        for name in EVENT_LOOP_FIELDS:
            if getattr(self, name):
                raise ValueError(
                    f"cpu.{name} is a cost of a goroutine the model runs with the event "
                    f'loop only: set cpu.event_loop = true, or cpu.{name} = "0us"'
                )
        return self

    @model_validator(mode="after")
    def _sysmon_round_with_sysmon(self) -> CpuConfig:
        # Without sysmon there are no rounds: the cost would be silently unused.
        if self.per_sysmon_round and not self.sysmon:
            raise ValueError(
                "cpu.per_sysmon_round is the CPU time of a round of Go's sysmon thread: "
                'set cpu.sysmon = true, or cpu.per_sysmon_round = "0us"'
            )
        return self

    @model_validator(mode="after")
    def _syscall_shares_with_sysmon(self) -> CpuConfig:
        # Only sysmon looks for a P in a system call, and only the event loop's yamux
        # goroutines make these calls: a share would be silently unused.
        for name in ("send_loop_syscall_share", "recv_loop_syscall_share"):
            if getattr(self, name) != 1.0 and not (self.sysmon and self.event_loop):
                raise ValueError(
                    f"cpu.{name} is where Go's sysmon finds yamux's goroutines in a system "
                    f"call: set cpu.sysmon = true and cpu.event_loop = true, or cpu.{name} = 1"
                )
        return self

    @model_validator(mode="after")
    def _goroutines_on_shared_hosts(self) -> CpuConfig:
        # The model runs each node's goroutines only on a time-sliced host (slices.rs).
        if self.nodes_per_host > self.cores:
            return self
        turns = [(name, '"0us"') for name in TURN_FIELDS if getattr(self, name)]
        others = [("event_loop", "false")] if self.event_loop else []
        others += [("sysmon", "false")] if self.sysmon else []
        others += [("record_waits", "[]")] if self.record_waits else []
        for name, off in others + turns:
            raise ValueError(
                f"cpu.{name} needs the model's goroutines, which it runs on time-sliced "
                f"hosts only: set cpu.nodes_per_host above cpu.cores, or cpu.{name} = {off}"
            )
        return self

    def charges(self) -> bool:
        return any(getattr(self, name) for name in EVERY_COST)

    def at_speed(self, ns: int) -> int:
        """A cost as the hosts pay it: measured on the reference machine, divided by
        `speed`."""
        return round(ns / self.speed)

    def charged(self) -> CpuConfig:
        """This section with every cost as the hosts pay it (`at_speed`), at speed 1."""
        costs = {name: self.at_speed(getattr(self, name)) for name in EVERY_COST}
        return self.model_copy(update={**costs, "speed": 1.0})

    def sigmas(self) -> dict[str, float]:
        """Each cost's lognormal shape, `sigma` where it has none of its own."""
        own = {name: getattr(self, f"sigma_{name}") for name in COST_FIELDS}
        return {name: self.sigma if s is None else s for name, s in own.items()}

    def slice_ns(self) -> int:
        """The time slice of a shared host, given or Linux's default."""
        return self.time_slice if self.time_slice is not None else kernel_time_slice(self.cores)


def kernel_time_slice(cores: int) -> int:
    """Linux's default time slice in ns: EEVDF's base slice, 0.75 ms scaled by
    1 + ilog2(CPUs, at most 8) (kernel/sched/fair.c, SCHED_TUNABLESCALING_LOG)."""
    return 750 * US * (1 + min(cores, 8).bit_length() - 1)


def measured_costs(cores: int, event_loop: bool = False) -> dict[str, int]:
    """The measured costs for a host of `cores`: a node there runs with GOMAXPROCS = cores
    (go's default), and one P was measured apart from two. More than 2 was not measured
    (the machine has 2 CPUs): such hosts get the costs of 2. On one P with the event loop
    modelled, each cost sits on its own goroutine, the loop's included."""
    if cores != 1:
        return MEASURED
    return MEASURED_ONE_P_LOOP if event_loop else MEASURED_ONE_P


# The largest message the event loop's stream windows are modelled for: its RPC fits
# half a yamux window (crates/engine/src/event_loop.rs, LARGEST_RPC = 128 KiB), less
# room for the RPC's framing and signature fields.
EVENT_LOOP_MAX_MESSAGE = 127 * 1024


def measured_event_loop(data: dict[str, Any], cpu: dict[str, Any]) -> bool:
    """Whether `costs = "measured"` models the event loop: on a time-sliced host of one
    core (where its costs were measured, by goroutine), unless the scenario says, has
    faults (the loop does not model nodes going down) or messages too large for it."""
    if "event_loop" in cpu:
        return bool(cpu["event_loop"])
    cores = _int(cpu.get("cores", 1))
    shared = cores == 1 and _int(cpu.get("nodes_per_host", 1)) > cores
    return shared and not data.get("faults") and _message_size(data) <= EVENT_LOOP_MAX_MESSAGE


def _message_size(data: dict[str, Any]) -> int:
    # Bad values are the schema's to report (workload.size); here they keep the loop off.
    workload = data.get("workload") if isinstance(data.get("workload"), dict) else {}
    try:
        return parse_size(workload.get("size", 1000))
    except (TypeError, ValueError):
        return EVENT_LOOP_MAX_MESSAGE + 1


def fill_measured(data: dict[str, Any]) -> dict[str, Any]:
    """A scenario's raw data with `cpu.costs = "measured"` written out as the costs of
    its hosts' cores (`cores`, default 1), and the event loop and `sysmon` where they
    model them."""
    cpu = data.get("cpu")
    if not isinstance(cpu, dict) or cpu.get("costs") != "measured":
        return data
    protocol = resolved_protocol(data)
    signing = protocol.get("signing", "strict-sign")
    message_id = protocol.get("message_id", "go")
    cores = _int(cpu.get("cores", 1))
    event_loop = measured_event_loop(data, cpu)
    costs = measured_costs(cores, event_loop)
    measured = {name: f"{ns}ns" for name, ns in costs.items()}
    by_goroutine = cores == 1 and event_loop
    filled = {
        **measured,
        **signature_costs(signing, by_goroutine),
        "per_kb_message_id": f"{MEASURED_PER_KB_MESSAGE_ID.get(message_id, 0)}ns",
        "event_loop": event_loop,
        "sysmon": event_loop,
    }
    # The shares are where sysmon looks for the loop's system calls: with both only.
    if event_loop and cpu.get("sysmon", event_loop) is True:
        filled |= MEASURED_SYSCALL_SHARES
    return {**data, "cpu": {**filled, **cpu}}


def resolved_protocol(data: dict[str, Any]) -> dict[str, Any]:
    """The scenario's [protocol] over its preset (what the schema will resolve), for
    the costs that depend on its signing and message ids."""
    protocol = data.get("protocol") if isinstance(data.get("protocol"), dict) else {}
    return over_preset(protocol)


def signature_costs(signing: str, by_goroutine: bool) -> dict[str, str]:
    """The measured costs that depend on the signing policy. Only the costs measured by
    goroutine (one P, the event loop) hold the validation worker apart; the others' costs
    per kB received were fitted on 32 kB signed messages against 1 kB ones, the check's
    hashing included (docs/network-calibration.md): no `per_kb_copy` on top."""

    def of(table: dict[str, int]) -> str:
        return f"{table.get(signing, table['strict-sign'])}ns"

    copies = MEASURED_PER_COPY_ONE_P_LOOP if by_goroutine else MEASURED_PER_COPY
    publish = MEASURED_PER_PUBLISH_ONE_P_LOOP if by_goroutine else MEASURED_PER_PUBLISH
    return {
        "per_copy": of(copies),
        "per_kb_copy": of(MEASURED_PER_KB_COPY) if by_goroutine else "0ns",
        "per_publish": of(publish),
        "per_kb_publish": of(MEASURED_PER_KB_PUBLISH),
    }


def _int(raw: Any) -> int:
    # Bad values are the schema's to report (cpu.cores, cpu.nodes_per_host); here they
    # pick either set.
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 1
