"""Where real nodes' CPU goes, by family of work, per count of what drives it.

Takes results folders of `gossiplab profile` on the calibration network
(bench/scenarios/cpu/calib-*.toml). Every sample of every node's CPU profile
(`testbed/node*/cpu.pprof`, read with `go tool pprof -traces`) goes to one family: the
first frame from the leaf up that names one decides (so a `futex` under a channel send
is a thread wake-up, a `write` syscall under Noise is the write path):

- read: the read syscall, `runtime.netpoll` (epoll), Noise's decryption, yamux's
  reading goroutine (`recvLoop`) and stream reads;
- write: the write syscall, Noise's encryption, yamux's sending goroutine (`sendLoop`);
- wake-ups: Go's scheduler and its threads (`schedule`, `findRunnable`, `park_m`,
  `ready`, `wakep`, `startm`/`stopm`, `futex`, `sysmon`, syscall entry and exit);
- ed25519: signing and signature checks;
- pubsub: go-libp2p-pubsub, protobuf and msgio;
- GC: the collector (marking, sweeping, assists, write barriers);
- other: the rest.

Each family's share of the samples, times the CPU the nodes used over the measured
interval (`resources.parquet`, as bench/cpu_calibration.py takes it), divided by the
count that drives it (read syscalls, write syscalls, voluntary context switches, copies
validated, RPCs = payload copies + control messages, copies received), summed over the
nodes of a run. A family whose cost per count is the same at every load is a cost the
model can charge per that count.

    .venv/bin/python bench/cpu_profile_families.py RESULTS...
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from cpu_calibration import measure

# (family, substrings of a frame), tried in this order on each frame from the leaf up.
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "gc",
        (
            "runtime.gcDrain",
            "runtime.gcBgMarkWorker",
            "runtime.gcAssistAlloc",
            "runtime.scanobject",
            "runtime.markroot",
            "runtime.bgsweep",
            "runtime.sweepone",
            "runtime.bgscavenge",
            "runtime.wbBufFlush",
            "runtime.gcMarkDone",
            "runtime.gcStart",
            "runtime.greyobject",
            "runtime.scanstack",
            "runtime.gcMarkTermination",
        ),
    ),
    (
        "read",
        (
            "runtime.netpoll",
            "syscall.read",
            "poll.(*FD).Read",
            "noise.(*secureSession).Read",
            "noise.(*secureSession).readNext",
            "CipherState).Decrypt",
            "yamux/v5.(*Session).recv",
            "yamux/v5.(*Stream).Read",
        ),
    ),
    (
        "write",
        (
            "syscall.write",
            "poll.(*FD).Write",
            "noise.(*secureSession).Write",
            "CipherState).Encrypt",
            "yamux/v5.(*Session).send",
            "yamux/v5.(*Stream).Write",
        ),
    ),
    (
        "wakeups",
        (
            "runtime.futex",
            "runtime.notewakeup",
            "runtime.notesleep",
            "runtime.wakep",
            "runtime.startm",
            "runtime.stopm",
            "runtime.schedule",
            "runtime.findRunnable",
            "runtime.park_m",
            "runtime.ready",
            "runtime.goready",
            "runtime.gopark",
            "runtime.mcall",
            "runtime.sysmon",
            "runtime.usleep",
            "runtime.osyield",
            "runtime.stealWork",
            "runtime.runqgrab",
            "runtime.handoffp",
            "runtime.exitsyscall",
            "runtime.entersyscall",
            "runtime.reentersyscall",
            "runtime.gogo",
            "runtime.lock2",
            "runtime.unlock2",
        ),
    ),
    ("ed25519", ("ed25519", "edwards25519")),
    ("pubsub", ("go-libp2p-pubsub", "google.golang.org/protobuf", "go-msgio")),
)
NAMES = [f for f, _ in FAMILIES] + ["other"]
# Each family's natural count (columns of bench/cpu_calibration.py's rows).
DRIVER = {
    "read": "read_syscalls",
    "write": "write_syscalls",
    "wakeups": "voluntary_switches",
    "ed25519": "validated",
    "pubsub": "rpcs",
    "gc": "copies",
    "other": "copies",
}


def family(stack: list[str]) -> str:
    """The family of a sample whose frames run from the leaf up."""
    for frame in stack:
        for name, marks in FAMILIES:
            if any(m in frame for m in marks):
                return name
    return "other"


def _ms(value: str) -> float:
    """A pprof sample value ("10ms", "1.20s") in milliseconds."""
    if value.endswith("ms"):
        return float(value[:-2])
    if value.endswith("us"):
        return float(value[:-2]) / 1e3
    return float(value.rstrip("s")) * 1e3


def traces(pprof: Path) -> Iterator[tuple[float, list[str]]]:
    """Every sampled stack of one node's profile (leaf first), with its milliseconds."""
    text = subprocess.run(
        ["go", "tool", "pprof", "-traces", str(pprof)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for block in text.split("-----------+")[1:]:
        lines = [ln for ln in block.splitlines()[1:] if ln.strip()]
        if not lines:
            continue
        value, first = lines[0].split(None, 1)
        yield _ms(value), [first.strip()] + [ln.strip() for ln in lines[1:]]


def profile_families(pprof: Path) -> dict[str, float]:
    """Milliseconds of samples per family in one node's profile."""
    totals = dict.fromkeys(NAMES, 0.0)
    for ms, stack in traces(pprof):
        totals[family(stack)] += ms
    return totals


def run_table(folder: Path) -> pl.DataFrame:
    """One run: per family, its share, its CPU, its count and its cost per count."""
    rows, _ = measure(folder)
    samples = dict.fromkeys(NAMES, 0.0)
    for pprof in sorted((folder / "testbed").glob("node*/cpu.pprof")):
        for name, ms in profile_families(pprof).items():
            samples[name] += ms
    total = sum(samples.values())
    cpu_s = float(rows["cpu_s"].sum())
    counts = rows.with_columns(
        rpcs=pl.col("copies") + pl.col("control"),
    ).select(pl.col(c).sum() for c in set(DRIVER.values()))
    out = []
    for name in NAMES:
        share = samples[name] / total
        count = float(counts[DRIVER[name]][0])
        family_s = share * cpu_s
        per = family_s / count * 1e6 if count else float("nan")
        out.append((folder.name, name, share, family_s, DRIVER[name], count, per))
    return pl.DataFrame(
        out,
        schema=["run", "family", "share", "cpu_s", "per", "count", "us_per_count"],
        orient="row",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    args = parser.parse_args()
    table = pl.concat([run_table(folder) for folder in args.results])
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=3, tbl_width_chars=200):
        print(table)


if __name__ == "__main__":
    main()
