"""Where real nodes' CPU goes, by goroutine, per count of what drives it.

Takes results folders of `gossiplab profile` (the calibration network,
bench/scenarios/cpu/calib-*.toml, or the cliff files, scenarios/crosscheck/cliff-*.toml).
Every sample of every node's CPU profile (`testbed/node*/cpu.pprof`, read with
`go tool pprof -traces`, whose stacks run from the leaf to the goroutine's entry) goes to
the goroutine that ran it, named by the first frame from the root down that names one:

- loop: go-libp2p-pubsub's event loop, `pubsub.go:processLoop`, split by what it runs:
  `handleIncomingRPC` (an RPC from `incoming`: subscriptions, the seen check and
  `validation.go:Push` per message, the router's control handling), `publishMessage` (a
  validated message from `sendMsg`: `markDelivered`, the subscribers, `rt.Publish`, which
  pushes a forward onto each mesh peer's queue), split into its `sendRPC` calls (one per
  forward) and the rest, the heartbeat (`eval` thunks:
  `gossipsub.go:heartbeat`, gossip, mesh maintenance) and the rest (the `select`, its
  channel operations);
- reader: a peer's reading goroutine, `comm.go:handleNewStream` (msgio framing, protobuf
  decoding, the send on `incoming`);
- writer: a peer's writing goroutine, `comm.go:handleSendingMessages` (protobuf encoding,
  yamux's `Stream.Write`, Noise's encryption, the write syscall);
- validator: `validation.go:validateWorker` (ed25519, `markSeen`, the send on `sendMsg`);
- publisher: the application's `Topic.Publish` (signing, `validation.go:PushLocal`);
- yamux-recv, yamux-send: yamux's `recvLoop` (the read syscalls, Noise's decryption) and
  `sendLoop` per connection;
- gc: the collector's own goroutines (marking, sweeping, scavenging);
- runtime: the scheduler on the thread's own stack (`runtime.mcall`: `park_m`,
  `schedule`, `findRunnable`, the netpoller, timers) and `sysmon`;
- tracer: the testbed's own event tracer (not go-libp2p-pubsub's work);
- other: the rest.

A goroutine's share of the samples, times the CPU the nodes used over the measured
interval (`resources.parquet`, as bench/cpu_calibration.py takes it), over the count
that drives it, summed over the nodes of a run: RPCs (write syscalls, one per RPC: every
RPC a node writes is one another node reads), copies validated (first deliveries, signed
runs), forwards (payload copies queued for a peer, `traffic.parquet`), node-seconds,
voluntary context switches, read syscalls. Last, each goroutine's share of its samples
in a system call (the kernel's time under the syscall package's entry): where `sysmon`
can find the node's P in one (`runtime/proc.go:retake`).

    .venv/bin/python bench/cpu_profile_goroutines.py RESULTS...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from cpu_calibration import measure
from cpu_profile_families import traces

PUBSUB = "github.com/libp2p/go-libp2p-pubsub."
# (goroutine, frame substrings), tried on each frame from the root down.
GOROUTINES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("loop", (PUBSUB + "(*PubSub).processLoop",)),
    ("reader", (PUBSUB + "(*PubSub).handleNewStream",)),
    ("writer", (PUBSUB + "(*PubSub).handleSendingMessages",)),
    ("validator", (PUBSUB + "(*validation).validateWorker",)),
    ("publisher", (PUBSUB + "(*Topic).Publish",)),
    ("yamux-recv", ("yamux/v5.(*Session).recv",)),
    ("yamux-send", ("yamux/v5.(*Session).send",)),
    ("tracer", ("gossipnode.(*FileTracer)",)),
    (
        "gc",
        (
            "runtime.gcBgMarkWorker",
            "runtime.bgsweep",
            "runtime.bgscavenge",
            "runtime.gcMarkDone",
            "runtime.forEachP",
        ),
    ),
    ("runtime", ("runtime.mcall", "runtime.mstart", "runtime.morestack", "runtime.sysmon")),
)
# What the loop runs, by the first frame from the root down that names it.
LOOP_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("loop: handleIncomingRPC", (PUBSUB + "(*PubSub).handleIncomingRPC",)),
    ("loop: publishMessage", (PUBSUB + "(*PubSub).publishMessage",)),
    ("loop: heartbeat", (PUBSUB + "(*GossipSubRouter).heartbeat",)),
)
LOOP_REST = "loop: select and the rest"
# publishMessage split: its `sendRPC` per peer forwarded to (gossipsub.go:Publish), and the
# rest per message (markDelivered, the subscribers, the message cache).
PUBLISH = "loop: publishMessage"
PUBLISH_PARTS = (PUBLISH + ", sendRPC", PUBLISH + ", the rest")
SEND_RPC = PUBSUB + "(*GossipSubRouter).sendRPC"
NAMES = (
    [g for g, _ in GOROUTINES[:1]]
    + [p for p, _ in LOOP_PARTS if p != PUBLISH]
    + list(PUBLISH_PARTS)
    + [LOOP_REST]
    + [g for g, _ in GOROUTINES[1:]]
    + ["other"]
)
# Each goroutine's (or loop part's) natural count: columns of `counts` below.
DRIVER = {
    "loop": "rpcs",
    "loop: handleIncomingRPC": "rpcs",
    PUBLISH_PARTS[0]: "forwards",
    PUBLISH_PARTS[1]: "delivered",
    "loop: heartbeat": "node_s",
    LOOP_REST: "rpcs",
    "reader": "rpcs",
    "writer": "rpcs",
    "validator": "validated",
    "publisher": "published",
    "yamux-recv": "read_syscalls",
    "yamux-send": "rpcs",
    "tracer": "rpcs",
    "gc": "copies",
    "runtime": "voluntary_switches",
    "other": "copies",
}


def _first(stack_root_down: list[str], table: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    for frame in stack_root_down:
        for name, marks in table:
            if any(m in frame for m in marks):
                return name
    return ""


def goroutine(stack: list[str]) -> str:
    """The goroutine (and for the loop, its part) of a sample whose frames run leaf up."""
    root_down = stack[::-1]
    name = _first(root_down, GOROUTINES) or "other"
    if name != "loop":
        return name
    part = _first(root_down, LOOP_PARTS) or LOOP_REST
    if part != PUBLISH:
        return part
    return PUBLISH_PARTS[0] if any(SEND_RPC in frame for frame in stack) else PUBLISH_PARTS[1]


def profile_goroutines(pprof: Path) -> dict[str, float]:
    """Milliseconds of samples per goroutine (the loop by part) in one node's profile."""
    totals = dict.fromkeys(NAMES, 0.0)
    for ms, stack in traces(pprof):
        totals[goroutine(stack)] += ms
    return totals


# A sample in a system call has the syscall package's entry on its stack (the kernel's
# time under `RawSyscall6` counts in the thread's CPU time, which the profiler samples).
SYSCALL_FRAME = "syscall.Syscall"


def syscall_samples(folder: Path) -> dict[str, tuple[float, float]]:
    """Per goroutine, its samples' milliseconds over a run's nodes: all, and in a system
    call."""
    out: dict[str, tuple[float, float]] = {}
    for pprof in sorted((folder / "testbed").glob("node*/cpu.pprof")):
        for ms, stack in traces(pprof):
            name = goroutine(stack)
            inside = ms if any(SYSCALL_FRAME in frame for frame in stack) else 0.0
            total, in_calls = out.get(name, (0.0, 0.0))
            out[name] = (total + ms, in_calls + inside)
    return out


def counts(folder: Path) -> dict[str, float]:
    """A run's counts over the measured interval, summed over its nodes."""
    rows, _ = measure(folder)
    published = pl.read_parquet(folder / "publishes.parquet").height
    delivered = pl.read_parquet(folder / "deliveries.parquet").height
    sums = rows.select(
        pl.col("copies", "validated", "node_s", "read_syscalls", "voluntary_switches").sum(),
        rpcs=pl.col("write_syscalls").sum(),
        cpu_s=pl.col("cpu_s").sum(),
    ).row(0, named=True)
    traffic = pl.read_parquet(folder / "traffic.parquet").filter(pl.col("kind") == "payload")
    forwards = float(traffic["msgs_sent"].sum())
    return {
        **sums,
        "published": float(published),
        "delivered": float(delivered),
        "forwards": forwards,
    }


def run_table(folder: Path) -> pl.DataFrame:
    """One run: per goroutine, its share, its CPU, its count and its cost per count."""
    samples = dict.fromkeys(NAMES, 0.0)
    for pprof in sorted((folder / "testbed").glob("node*/cpu.pprof")):
        for name, ms in profile_goroutines(pprof).items():
            samples[name] += ms
    # The loop's row is the sum of its parts.
    samples["loop"] = sum(samples[p] for p in NAMES if p.startswith("loop: "))
    total = sum(v for k, v in samples.items() if k != "loop")
    c = counts(folder)
    out = []
    for name in NAMES:
        share = samples[name] / total
        count = c[DRIVER[name]]
        cpu_s = share * c["cpu_s"]
        per = cpu_s / count * 1e6 if count else float("nan")
        out.append((folder.name, name, samples[name], share, cpu_s, DRIVER[name], count, per))
    return pl.DataFrame(
        out,
        schema=["run", "goroutine", "ms", "share", "cpu_s", "per", "count", "us_per_count"],
        orient="row",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    args = parser.parse_args()
    for folder in args.results:
        c = counts(folder)
        print(
            f"{folder.name}: CPU {c['cpu_s']:.2f} s, RPCs {c['rpcs']:,.0f}, copies "
            f"validated {c['validated']:,.0f}, delivered {c['delivered']:,.0f}, "
            f"node-s {c['node_s']:.0f}, switches {c['voluntary_switches']:,.0f}"
        )
    table = pl.concat([run_table(folder) for folder in args.results])
    runs = [folder.name for folder in args.results]
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=2, tbl_width_chars=250):
        for value in ("share", "us_per_count"):
            wide = table.pivot(on="run", index=["goroutine", "per"], values=value)
            print(f"\n{value}:")
            print(wide.select("goroutine", "per", *runs))
        # Over every run given: each goroutine's CPU over the sum of its count.
        pooled = table.group_by("goroutine", "per", maintain_order=True).agg(
            us_per_count=pl.col("cpu_s").sum() / pl.col("count").sum() * 1e6
        )
        print("\npooled over the runs:")
        print(pooled)
    _print_syscall_shares(args.results)


def _print_syscall_shares(folders: list[Path]) -> None:
    """Each goroutine's share of its samples in a system call, per run and pooled."""
    runs = {folder.name: syscall_samples(folder) for folder in folders}
    names = [n for n in NAMES if any(runs[r].get(n, (0.0, 0.0))[1] for r in runs)]
    print("\nshare of the goroutine's samples in a system call (per run, then pooled):")
    for name in names:
        cells = [runs[r].get(name, (0.0, 0.0)) for r in runs]
        per_run = "  ".join(f"{inside / total:.2f}" if total else "-" for total, inside in cells)
        pooled = sum(i for _, i in cells) / sum(t for t, _ in cells)
        print(f"  {name:<12} {per_run}  pooled {pooled:.2f}")


if __name__ == "__main__":
    main()
