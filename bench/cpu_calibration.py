"""The model's CPU costs (`[cpu] costs = "measured"`) from profiles of real nodes.

Takes three results folders of `gossiplab profile` on the same network (40 nodes,
Barabasi-Albert m = 4, 10 ms links; bench/scenarios/cpu/calib-*.toml): 1000-byte signed
messages, the same unsigned, and 32 kB signed messages. Per run it reads the nodes' CPU time (`resources.parquet`, from
/proc, over the whole run), the payload copies they received and the first receipts
(`traffic.parquet`, `deliveries.parquet`), and the share of CPU the profiles give to
ed25519 (`run.testbed.profile.layers`). Then:

- per copy validated (`per_copy`, signed): ed25519's share of the signed run's CPU over
  the copies validated (first receipts; signing the few publications is negligible);
- per kB each way (`per_kb_sent` = `per_kb_received`): the extra CPU per copy of the
  32 kB run over the 1 kB run, per extra kB, halved between the writer and the reader
  (chacha20-poly1305 seals and opens at the same speed);
- per RPC each way (`per_rpc_sent` = `per_rpc_received`): what is left per copy in the
  1 kB runs (mean of signed and unsigned) after validation and bytes, halved; at 1 kB
  nearly every RPC carries one copy, and heartbeats and gossip are folded in.

    .venv/bin/python bench/cpu_calibration.py SIGNED UNSIGNED LARGE
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl


def measure(folder: Path) -> dict[str, float]:
    summary = json.loads((folder / "summary.json").read_text())
    resources = pl.read_parquet(folder / "resources.parquet")
    cpu_s = resources.group_by("node").agg(pl.col("cpu_s").max() - pl.col("cpu_s").min())
    traffic = pl.read_parquet(folder / "traffic.parquet").filter(pl.col("kind") == "payload")
    copies = float(traffic["msgs_recv"].sum())
    layers = summary["run"]["testbed"]["profile"]["layers"]
    return {
        "cpu_s": float(cpu_s["cpu_s"].sum()),
        "copies": copies,
        "bytes_per_copy": float(traffic["bytes_recv"].sum()) / copies,
        "validated": float(pl.read_parquet(folder / "deliveries.parquet").height),
        "ed25519_share": float(layers.get("signing (ed25519)", 0.0)),
    }


def calibrate(signed: Path, unsigned: Path, large: Path) -> dict[str, float]:
    s, u, big = measure(signed), measure(unsigned), measure(large)
    # CPU µs per received copy (each copy is also sent once)
    us = {name: r["cpu_s"] / r["copies"] * 1e6 for name, r in (("s", s), ("u", u), ("l", big))}
    validate = s["ed25519_share"] * s["cpu_s"] / s["validated"] * 1e6
    extra_kb = (big["bytes_per_copy"] - s["bytes_per_copy"]) / 1000
    per_kb = (us["l"] - us["s"]) / extra_kb / 2
    kb = s["bytes_per_copy"] / 1000
    rest_signed = us["s"] - validate * s["validated"] / s["copies"] - 2 * per_kb * kb
    rest_unsigned = us["u"] - 2 * per_kb * u["bytes_per_copy"] / 1000
    return {
        "cpu µs per received copy, signed 1 kB": us["s"],
        "cpu µs per received copy, unsigned 1 kB": us["u"],
        "cpu µs per received copy, signed 32 kB": us["l"],
        "per_copy (signed), µs": validate,
        "per_kb_sent = per_kb_received, µs": per_kb,
        "per_rpc_sent = per_rpc_received, µs": (rest_signed + rest_unsigned) / 4,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("signed", "unsigned", "large"):
        parser.add_argument(name, type=Path)
    args = parser.parse_args()
    for key, value in calibrate(args.signed, args.unsigned, args.large).items():
        print(f"{key:45s} {value:8.1f}")


if __name__ == "__main__":
    main()
