"""`[cpu] costs = "measured"` gives the costs measured with the node's GOMAXPROCS, which
is its host's `cores` (go's default: runtime/os_linux.go:getCPUCount)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.scenario.cpu import MEASURED, MEASURED_ONE_P

HERE = Path(__file__).parent
US = 1_000
# docs/network-calibration.md, "CPU costs": on two P a reader's wake-up, two read
# syscalls; on one P a node's wake-up, the 3.24 voluntary switches its threads make per
# wake-up (bench/wakeup_switches.py) at 11 µs each, and 1.75 µs per copy received or
# sent.
WAKEUP_TWO_P_US = 62
SWITCHES_PER_NODE_WAKEUP = 3.24
NODE_WAKEUP_ONE_P_US = round(SWITCHES_PER_NODE_WAKEUP * 11.0, 3)
PER_COPY_ONE_P_US = 1.75
ONE_P = ("per_read_wakeup", "per_node_wakeup", "per_rpc_received", "per_rpc_sent")


def _cpu(cores: int | None) -> dict[str, int]:
    cpu = {"costs": "measured"} | ({} if cores is None else {"cores": cores})
    parsed = parse_scenario({"cpu": cpu}, HERE).cpu
    return {name: getattr(parsed, name) for name in MEASURED}


def test_one_core_gets_the_one_p_costs_and_more_cores_the_unconfined_ones() -> None:
    assert _cpu(1)["per_read_wakeup"] == 0, "the node's wake-up replaces the reader's"
    assert _cpu(1)["per_node_wakeup"] == NODE_WAKEUP_ONE_P_US * US
    assert _cpu(2)["per_node_wakeup"] == 0
    assert _cpu(None) == _cpu(1), "cores defaults to 1"
    assert _cpu(2)["per_read_wakeup"] == WAKEUP_TWO_P_US * US
    assert _cpu(8) == _cpu(2), "more than 2 cores were not measured: the costs of 2"
    # Bytes, signatures and signing are charged alike: only the runtime's share differs.
    same = {name for name in MEASURED if name not in ONE_P}
    assert {n: _cpu(1)[n] for n in same} == {n: _cpu(2)[n] for n in same}
    assert MEASURED_ONE_P["per_node_wakeup"] < MEASURED["per_read_wakeup"]


def test_a_given_cost_still_wins_over_either_set() -> None:
    data = {"cpu": {"costs": "measured", "cores": 1, "per_read_wakeup": "7us"}}
    assert parse_scenario(data, HERE).cpu.per_read_wakeup == 7 * US


def _latency_ms(tmp_path: Path, cores: int) -> float:
    # One message over one 10 ms link between idle nodes: on 2 cores the receiver's
    # reader was waiting (one reader wake-up); on 1 core the receiver was idle (one node
    # wake-up; the publisher's own wake-up comes before its application calls Publish,
    # where latency starts, as our Go node reads its clock) and the copy is written and
    # read once each (1.75 µs each way). Everything else it pays is the same on both.
    data = {
        "topology": {"kind": "line", "nodes": 2},
        "network": {"latency": "10ms"},
        "cpu": {"costs": "measured", "cores": cores},
        "workload": {"messages": 1, "warmup": "1s", "cooldown": "1s"},
    }
    summary = run(parse_scenario(data, tmp_path), tmp_path / str(cores)).summary
    return float(summary["receipt_latency_ms"]["max"])


def test_a_scenario_on_one_core_pays_the_one_p_wake_up(tmp_path: Path) -> None:
    difference_us = (_latency_ms(tmp_path, 2) - _latency_ms(tmp_path, 1)) * 1_000
    one_p_us = NODE_WAKEUP_ONE_P_US + 2 * PER_COPY_ONE_P_US
    assert abs(difference_us - (WAKEUP_TWO_P_US - one_p_us)) < 1


# docs/network-calibration.md, "Per goroutine turn": the one-P profiles by goroutine and
# Go execution traces of the cliff file at 80-200 msg/s, each goroutine's CPU fitted as
# a part per item and a part per turn (bench/cpu_fit_turns.py; yamux's recvLoop apart
# from the stream's reader, by the profiles' frames and the traces' goroutines); the
# publisher's CPU per publication (signing and ValidateLocal's check of it); the node's
# wake-up fitted to the real nodes' CPU with the model's own counts
# (bench/cpu_fit_wakeup.py): 11 µs.
LOOP_ONE_P_US = {
    "per_rpc_loop": 3.59,
    "per_publish_loop": 3.72,
    "per_forward_loop": 0.98,
    "per_loop_turn": 4.48,
    "per_kb_received": 1.03,
    "per_recv_loop_turn": 9.27,
    "per_rpc_received": 1.88,
    "per_reader_turn": 0.68,
    "per_rpc_sent": 4.44,
    "per_kb_sent": 4.36,
    "per_writer_turn": 1.37,
    "per_send_loop_turn": 5.66,
    "per_copy": 44.69,
    "per_validator_turn": 28.72,
    "per_publish": 94.3,
    "per_node_wakeup": 11,
}


def _shared(**cpu: object) -> dict[str, object]:
    return {"cpu": {"costs": "measured", "nodes_per_host": 40, "cores": 1, **cpu}}


def test_a_shared_core_gets_the_event_loop_and_the_split_by_goroutine() -> None:
    cpu = parse_scenario(_shared(), HERE).cpu
    assert cpu.event_loop
    got = {name: getattr(cpu, name) / US for name in LOOP_ONE_P_US}
    # Measured on 1000-byte messages, where the signature's cost per kB counts once.
    got["per_copy"] += cpu.per_kb_copy / US
    got["per_publish"] += cpu.per_kb_publish / US
    assert got == pytest.approx(LOOP_ONE_P_US)
    # Off by choice: the costs carry the loop's work where the loop is not modelled.
    off = parse_scenario(_shared(event_loop=False), HERE).cpu
    assert not off.event_loop
    assert off.per_rpc_loop == 0 and off.per_publish_loop == 0 and off.per_forward_loop == 0
    assert off.per_node_wakeup == NODE_WAKEUP_ONE_P_US * US
    assert off.per_copy == 84 * US
    assert off.per_validator_turn == 0 and off.per_loop_turn == 0, "turns: with the loop"
    # Unsigned, the publisher neither signs nor checks a signature.
    unsigned = parse_scenario(
        {**_shared(), "protocol": {"signing": "strict-no-sign", "message_id": "ethereum"}}, HERE
    ).cpu
    assert unsigned.per_publish == round((94.3 - 17.3 - 49.8) * US)
    assert unsigned.per_kb_copy == unsigned.per_kb_publish == 0, "no signature to hash"


def test_ethereum_s_preset_neither_signs_nor_checks_and_hashes_each_copy_s_data() -> None:
    # presets.toml: Ethereum's consensus clients publish unsigned (strict-no-sign) with
    # ids hashing the data (SHA-256, gossipnode/params.go:ethereumMessageID), which go
    # computes for every copy it receives (pubsub.go:shouldPush). The preset decides
    # the measured costs as if the fields were written out.
    preset = parse_scenario({**_shared(), "protocol": {"preset": "ethereum"}}, HERE).cpu
    written = {"signing": "strict-no-sign", "message_id": "ethereum"}
    explicit = parse_scenario({**_shared(), "protocol": written}, HERE).cpu
    assert preset == explicit
    assert preset.per_copy == preset.per_kb_copy == preset.per_kb_publish == 0
    assert preset.per_kb_message_id > 0
    go_ids = parse_scenario(_shared(), HERE).cpu
    assert go_ids.per_kb_message_id == 0, "go's id is from + seqno: nothing to hash"


def test_signatures_cost_by_the_bytes_they_cover() -> None:
    # sign.go: a check hashes the message once (ed25519.Verify), a publication is hashed
    # twice to sign it and once more to check it (signMessage, then PushLocal), so a
    # publication's cost per kB lies between two and three checks' (each also marshals
    # its own copy of the message).
    cpu = parse_scenario(_shared(), HERE).cpu
    assert 2 * cpu.per_kb_copy < cpu.per_kb_publish < 3 * cpu.per_kb_copy
    # Costs not measured by goroutine fitted their cost per kB received on 32 kB signed
    # messages, the check's hashing included: it is not charged twice.
    off = parse_scenario(_shared(event_loop=False), HERE).cpu
    assert off.per_kb_copy == 0 and off.per_kb_publish == cpu.per_kb_publish
    # At 1000 bytes a publication costs what was measured there, wherever it is charged.
    two = parse_scenario({"cpu": {"costs": "measured", "cores": 2}}, HERE).cpu
    assert two.per_publish + two.per_kb_publish == 29 * US


def test_the_measured_costs_hold_the_kernel_s_packet_work_already() -> None:
    # docs/network-calibration.md, "The kernel's network work": on the calibration machine
    # (no IRQ time accounting) the softirq work on the nodes' CPU runs in their syscalls
    # and counts in their CPU time, which the other costs were fitted to: 0, on one core
    # (by goroutine or not) and on two.
    for cpu in ({}, {"event_loop": False}):
        assert parse_scenario(_shared(**cpu), HERE).cpu.per_segment_kernel == 0
    two = {"cpu": {"costs": "measured", "cores": 2}}
    assert parse_scenario(two, HERE).cpu.per_segment_kernel == 0
    given = parse_scenario(_shared(per_segment_kernel="6us"), HERE).cpu
    assert given.per_segment_kernel == 6 * US


def test_the_measured_costs_leave_the_event_loop_off_where_it_is_not_modelled() -> None:
    one_node = {"cpu": {"costs": "measured", "cores": 1}}
    assert not parse_scenario(one_node, HERE).cpu.event_loop, "not time-sliced"
    two_cores = _shared(cores=2)
    assert not parse_scenario(two_cores, HERE).cpu.event_loop, "not measured on 2 P"
    large = {**_shared(), "workload": {"size": "500KB"}}
    assert not parse_scenario(large, HERE).cpu.event_loop, "RPC over half a window"
    faults = {
        **_shared(),
        "faults": [{"kind": "crash", "nodes": [1], "at": "1s"}],
    }
    assert not parse_scenario(faults, HERE).cpu.event_loop, "nodes going down"


def test_the_measured_costs_model_go_s_sysmon_with_the_event_loop() -> None:
    # The preset is Go's runtime as measured on a shared core: its sysmon thread with
    # the event loop (crates/engine/src/sysmon.rs); a scenario may still say otherwise.
    assert parse_scenario(_shared(), HERE).cpu.sysmon
    assert not parse_scenario(_shared(sysmon=False), HERE).cpu.sysmon
    assert not parse_scenario(_shared(event_loop=False), HERE).cpu.sysmon
    assert not parse_scenario(_shared(cores=2), HERE).cpu.sysmon, "no loop on 2 P"


def test_the_measured_costs_put_the_loop_s_system_calls_where_the_profiles_do() -> None:
    # Real sendLoops spend 0.79-0.86 of their CPU in the write, recvLoops 0.28-0.41 in
    # their reads (docs/network-calibration.md): the preset's shares, where sysmon looks;
    # without sysmon (or the loop) there is nothing to place; a scenario's own value wins.
    cpu = parse_scenario(_shared(), HERE).cpu
    assert (cpu.send_loop_syscall_share, cpu.recv_loop_syscall_share) == (0.82, 0.34)
    for off in (_shared(sysmon=False), _shared(event_loop=False), _shared(cores=2)):
        cpu = parse_scenario(off, HERE).cpu
        assert (cpu.send_loop_syscall_share, cpu.recv_loop_syscall_share) == (1.0, 1.0)
    own = parse_scenario(_shared(send_loop_syscall_share=1), HERE).cpu
    assert (own.send_loop_syscall_share, own.recv_loop_syscall_share) == (1.0, 0.34)
