"""Why each PRUNE was sent, from a simnet (or testbed) run kept with its traces.

    .venv/bin/python tools/prune_causes.py RESULTS/simnet [--csv out.csv]

The run must have kept its traces with RPC events (`testbed.keep_traces = true`,
`testbed.trace_rpc = true`). Each PRUNE a node sends is classed by go-libp2p-pubsub
v0.17.0's code path (gossipsub.go):

- `trim`: the heartbeat removed the peer from a mesh at D_hi or more (`heartbeat`,
  "do we have too many peers?"); the tracer's PRUNE event comes at the same instant.
- `refuse-backoff`, `refuse-full`, `refuse-other`: the answer to a GRAFT received at the
  same instant (`handleGraft`): the node backs off the peer (a PRUNE between them in
  the last prune_backoff), its mesh holds D_hi or more and the peer is inbound, or else.

Times are split into mesh formation (before `--formation`, default 3 s) and later.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import sys
from pathlib import Path

SEND_RPC, RECV_RPC, GRAFT, PRUNE = 7, 6, 11, 12


def peer_index(folder: Path) -> dict[str, int]:
    """Trace peer id (base64 of the id's bytes) -> node index, from every node.json."""
    ids = {}
    for node_dir in folder.glob("node-*"):
        result = json.loads((node_dir / "node.json").read_text())
        ids[result["peer_id"]] = result["index"]
    return ids


def control(event: dict, key: str) -> dict:
    return event[key].get("meta", {}).get("control", {})


def node_rows(
    trace: Path,
    ids: dict[str, int],
    node: int,
    d_hi: int,
    backoff_ns: int,
    outbound: set[tuple[int, int]],
) -> list[dict]:
    """One row per PRUNE item this node sent, with its cause."""
    events = [json.loads(line) for line in trace.open() if line.strip()]
    mesh: set[int] = set()
    last_prune: dict[int, int] = {}  # peer -> time of the latest PRUNE either way
    rows = []
    # events at one instant: collect grafts received and mesh removals before the send
    grafted_now: dict[int, set[int]] = collections.defaultdict(set)
    removed_now: dict[int, set[int]] = collections.defaultdict(set)
    pruned_by_peer_now: dict[int, set[int]] = collections.defaultdict(set)
    mesh_before: dict[tuple[int, int], int] = {}
    for e in events:
        t = e["timestamp"]
        kind = e["type"]
        if kind == GRAFT:
            mesh.add(ids[e["graft"]["peerID"]])
        elif kind == PRUNE:
            peer = ids[e["prune"]["peerID"]]
            mesh_before[(t, peer)] = len(mesh)
            mesh.discard(peer)
            removed_now[t].add(peer)
        elif kind == RECV_RPC:
            peer = ids[e["recvRPC"]["receivedFrom"]]
            ctl = control(e, "recvRPC")
            if ctl.get("graft"):
                grafted_now[t].add(peer)
                mesh_before[(t, peer)] = len(mesh)
            if ctl.get("prune"):
                pruned_by_peer_now[t].add(peer)
                last_prune[peer] = t
        elif kind == SEND_RPC:
            peer = ids[e["sendRPC"]["sendTo"]]
            for _ in control(e, "sendRPC").get("prune", []):
                size = mesh_before.get((t, peer), len(mesh))
                if peer in removed_now[t] and peer not in pruned_by_peer_now[t]:
                    cause = "trim"
                elif peer in grafted_now[t]:
                    if peer in last_prune and t - last_prune[peer] < backoff_ns:
                        cause = "refuse-backoff"
                    elif size >= d_hi and (node, peer) not in outbound:
                        cause = "refuse-full"
                    else:
                        cause = "refuse-other"
                else:
                    cause = "unexplained"
                rows.append(
                    {
                        "t_ns": t,
                        "node": node,
                        "peer": peer,
                        "cause": cause,
                        "mesh": size,
                        "outbound": (node, peer) in outbound,
                    }
                )
                last_prune[peer] = t
    return rows


def summarize(rows: list[dict], formation_ns: int) -> str:
    table = collections.Counter()
    for r in rows:
        phase = "formation" if r["t_ns"] < formation_ns else "later"
        table[(r["cause"], phase)] += 1
    causes = sorted({c for c, _ in table})
    lines = [f"{'cause':<16}{'formation':>10}{'later':>8}{'total':>8}"]
    for c in causes:
        f, later = table[(c, "formation")], table[(c, "later")]
        lines.append(f"{c:<16}{f:>10}{later:>8}{f + later:>8}")
    lines.append(f"{'all':<16}{'':>10}{'':>8}{len(rows):>8}")
    return "\n".join(lines)


def dialed_pairs(results: Path) -> set[tuple[int, int]]:
    """(dialer, listener) pairs of the run's topology, from its resolved scenario."""
    from gossiplab.scenario import load_scenario
    from gossiplab.topology import build_topology

    topology = build_topology(load_scenario(results / "scenario.toml"))
    return {(int(a), int(b)) for a, b in topology.edges}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a simnet results folder kept with traces")
    parser.add_argument("--d-hi", type=int, default=12)
    parser.add_argument("--backoff-s", type=float, default=60.0)
    parser.add_argument("--formation", type=float, default=3.0, help="seconds")
    parser.add_argument("--csv", type=Path)
    args = parser.parse_args()
    folder = args.results / "simnet"
    if not folder.is_dir():
        folder = args.results / "testbed"
    ids = peer_index(folder)
    outbound = dialed_pairs(args.results)
    rows = []
    for node_dir in sorted(folder.glob("node-*")):
        node = int(node_dir.name.split("-")[1])
        rows += node_rows(
            node_dir / "trace.ndjson", ids, node, args.d_hi, int(args.backoff_s * 1e9), outbound
        )
    print(summarize(rows, int(args.formation * 1e9)))
    if args.csv:
        with args.csv.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["t_ns"])
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
