"""[cpu]: the schema, what reaches the engine, the report's line, and the overload cliff."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gossiplab.backends.model import engine_config
from gossiplab.backends.simnet import support as simnet_support
from gossiplab.backends.testbed import support as testbed_support
from gossiplab.errors import ScenarioError
from gossiplab.report.cpu_line import cpu_per_hop
from gossiplab.runner import run
from gossiplab.scenario import parse_scenario
from gossiplab.scenario.cpu import MEASURED_ONE_P, MEASURED_PER_COPY

HERE = Path(__file__).parent


def test_measured_costs_follow_the_signing_policy_and_yield_to_given_ones() -> None:
    signed = parse_scenario({"cpu": {"costs": "measured"}}, HERE).cpu
    assert signed.per_copy == MEASURED_PER_COPY["strict-sign"] > 0
    assert signed.per_rpc_sent == MEASURED_ONE_P["per_rpc_sent"]  # cores defaults to 1
    unsigned = parse_scenario(
        {
            "cpu": {"costs": "measured", "per_publish": "1ms"},
            "protocol": {"signing": "strict-no-sign", "message_id": "ethereum"},
        },
        HERE,
    ).cpu
    assert unsigned.per_copy == 0, "nothing to verify without signatures"
    assert unsigned.per_publish == 1_000_000


def test_the_engine_gets_hosts_cores_and_costs_in_nanoseconds() -> None:
    s = parse_scenario({"cpu": {"nodes_per_host": 4, "cores": 2, "per_kb_sent": "3us"}}, HERE)
    cpu = engine_config(s, 8, 10**9)["cpu"]
    assert (cpu["nodes_per_host"], cpu["cores"], cpu["per_kb_sent_ns"]) == (4, 2, 3000)
    assert cpu["per_rpc_sent_ns"] == 0


def test_each_cost_has_its_own_sigma_defaulting_to_the_common_one() -> None:
    s = parse_scenario({"cpu": {"sigma": 0.8, "sigma_per_copy": 0, "sigma_per_kb_sent": 2}}, HERE)
    cpu = engine_config(s, 8, 10**9)["cpu"]
    assert cpu["sigma_per_copy"] == 0.0
    assert cpu["sigma_per_kb_sent"] == 2.0
    assert cpu["sigma_per_rpc_received"] == cpu["sigma_per_publish"] == 0.8
    assert cpu["sigma_per_read_wakeup"] == 0.8
    own = parse_scenario({"cpu": {"per_read_wakeup": "67us", "sigma_per_read_wakeup": 0.5}}, HERE)
    cpu = engine_config(own, 8, 10**9)["cpu"]
    assert (cpu["per_read_wakeup_ns"], cpu["sigma_per_read_wakeup"]) == (67_000, 0.5)


def test_a_validator_turn_reaches_the_engine_and_delays_the_copy(tmp_path: Path) -> None:
    # Two nodes on one time-sliced core, one message: the receiver's validation worker
    # takes the copy in a turn of its own, so its turn's cost delays the copy by exactly
    # that much (the timelines are in crates/engine/tests/event_loop.rs).
    def latency_ms(turn: str) -> float:
        data = {
            "topology": {"kind": "line", "nodes": 2},
            "cpu": {"nodes_per_host": 2, "per_copy": "10us", "per_validator_turn": turn},
            "workload": {"messages": 1, "warmup": "1s", "cooldown": "1s"},
        }
        s = parse_scenario(data, tmp_path)
        assert (
            engine_config(s, 2, 10**9)["cpu"]["per_validator_turn_ns"] == s.cpu.per_validator_turn
        )
        summary = run(s, tmp_path / turn).summary
        return float(summary["receipt_latency_ms"]["max"])

    assert latency_ms("2ms") - latency_ms("0us") == pytest.approx(2.0)


def test_the_kernel_s_work_per_segment_reaches_the_engine_and_delays_the_copy(
    tmp_path: Path,
) -> None:
    # A line of two nodes, one 2000-byte message: its RPC is two 1460-byte segments, so
    # 1 ms per segment sent puts the copy 2 ms later (crates/engine/src/cpu.rs,
    # kernel_send_cost; the timelines are in crates/engine/tests/cpu_model.rs).
    def latency_ms(per_segment_ns: int) -> float:
        cpu = {"per_segment_kernel": f"{per_segment_ns}ns", "sigma_per_segment_kernel": 0}
        data = {
            "topology": {"kind": "line", "nodes": 2},
            "cpu": cpu,
            "workload": {"messages": 1, "size": 2000, "warmup": "1s", "cooldown": "1s"},
        }
        s = parse_scenario(data, tmp_path)
        assert engine_config(s, 2, 10**9)["cpu"]["per_segment_kernel_ns"] == per_segment_ns
        summary = run(s, tmp_path / str(per_segment_ns)).summary
        return float(summary["receipt_latency_ms"]["max"])

    assert latency_ms(1_000_000) - latency_ms(0) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("cores", "slice_us"), [(1, 750), (2, 1500), (3, 1500), (8, 3000), (64, 3000)]
)
def test_a_shared_host_slices_time_as_linux_does_by_default(cores: int, slice_us: int) -> None:
    # EEVDF's base slice: 0.75 ms × (1 + ilog2(min(CPUs, 8))), kernel/sched/fair.c.
    s = parse_scenario({"cpu": {"nodes_per_host": 100, "cores": cores}}, HERE)
    assert engine_config(s, 100, 10**9)["cpu"]["time_slice_ns"] == slice_us * 1000
    given = parse_scenario({"cpu": {"time_slice": "4ms"}}, HERE)
    assert engine_config(given, 100, 10**9)["cpu"]["time_slice_ns"] == 4_000_000


def test_the_kernel_s_tick_reaches_the_engine_as_one_over_its_rate() -> None:
    # CONFIG_HZ=250 (Debian's default, this machine's kernel): a tick every 4 ms; HRTICK
    # off, as in Linux's default scheduler features (kernel/sched/features.h).
    default = engine_config(parse_scenario({}, HERE), 100, 10**9)["cpu"]
    assert (default["kernel_tick_ns"], default["hrtick"]) == (4_000_000, False)
    given = parse_scenario({"cpu": {"kernel_hz": 1000, "hrtick": True}}, HERE)
    chosen = engine_config(given, 100, 10**9)["cpu"]
    assert (chosen["kernel_tick_ns"], chosen["hrtick"]) == (1_000_000, True)


@pytest.mark.parametrize(
    ("cpu", "path"),
    [
        ({"cores": 0}, "cpu.cores"),
        ({"kernel_hz": 200}, "cpu.kernel_hz"),
        ({"sigma": -1}, "cpu.sigma"),
        ({"sigma_per_copy": -0.5}, "cpu.sigma_per_copy"),
        ({"time_slice": "0ms"}, "cpu.time_slice"),
        ({"speed": 0}, "cpu.speed"),
    ],
)
def test_bad_values_name_the_field(cpu: dict[str, object], path: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario({"cpu": cpu}, HERE)
    assert path in str(err.value)


def test_real_backends_say_the_cpu_model_is_the_models() -> None:
    s = parse_scenario({"cpu": {"costs": "measured", "nodes_per_host": 40, "cores": 2}}, HERE)
    assert any(n.startswith("[cpu]") for n in testbed_support.notes(s))
    assert any(n.startswith("[cpu]") for n in simnet_support.notes(s))
    assert not any(n.startswith("[cpu]") for n in testbed_support.notes(parse_scenario({}, HERE)))


def test_the_report_line_names_every_cost_charged() -> None:
    s = parse_scenario(
        {
            "network": {"cpu_per_message": "100us"},
            "cpu": {"per_copy": "50us", "per_rpc_sent": "48us", "per_kb_sent": "6us"},
        },
        HERE,
    )
    assert cpu_per_hop(s) == "write 48 µs/RPC + 6 µs/kB, validate 150 µs/copy; own host, 1 core"
    assert cpu_per_hop(parse_scenario({}, HERE)).startswith("none")
    woken = {"per_rpc_received": "5us", "per_read_wakeup": "67us"}
    assert cpu_per_hop(parse_scenario({"cpu": woken}, HERE)).startswith(
        "read 5 µs/RPC + 67 µs/wake-up; "
    )
    alone = parse_scenario({"cpu": {"per_read_wakeup": "67us"}}, HERE)
    assert cpu_per_hop(alone).startswith("read 67 µs/wake-up; ")
    shared = {
        "costs": "measured",
        "nodes_per_host": 40,
        "cores": 2,
        "sigma": 1,
        "sigma_per_copy": 0,
    }
    line = cpu_per_hop(parse_scenario({"cpu": shared}, HERE))
    assert line.endswith(
        "σ = 1 (per_copy 0); 40 nodes per host, 2 cores, time slices of 1.5 ms ended at the "
        "next 4 ms tick or wake-up"
    )
    signed = {"per_copy": "40us", "per_kb_copy": "2.5us", "per_kb_publish": "6us"}
    assert cpu_per_hop(parse_scenario({"cpu": signed}, HERE)) == (
        "validate 40 µs/copy + 2.5 µs/kB; publish 6 µs/kB; own host, 1 core"
    )
    ids = {"per_rpc_received": "5us", "per_kb_message_id": "0.7us"}
    assert cpu_per_hop(parse_scenario({"cpu": ids}, HERE)).startswith(
        "read 5 µs/RPC, message id 0.7 µs/kB; "
    )
    looped = {"nodes_per_host": 40, "event_loop": True, "per_rpc_loop": "5us"}
    looped |= {"per_publish_loop": "6us", "per_forward_loop": "1.5us", "per_copy": "60us"}
    assert cpu_per_hop(parse_scenario({"cpu": looped}, HERE)).startswith(
        "event loop 5 µs/RPC + 6 µs/message + 1.5 µs/forward, validate 60 µs/copy; "
    )


def test_past_saturation_a_shared_host_drops_most_at_its_outbound_queues(tmp_path: Path) -> None:
    # 20 nodes on one 1-core host, 1000-byte signed messages at the measured costs of one
    # P (its nodes run with GOMAXPROCS = 1): a message costs the core about 20 × 4 copies
    # × 65 µs ≈ 5 ms, so 50 msg/s is far below saturation (~190 msg/s) and 400 msg/s
    # past it. Real nodes past saturation drop most copies at the senders' outbound
    # queues (docs/crosscheck.md, cliff-past: 67-78 % of the testbed's drops). Without
    # pubsub's event loop, a node's goroutines run in Go's order (goroutines.rs): the
    # validator, readied by a reader (runtime/proc.go:runqput into runnext), drains its
    # queue between reads, while a validated copy readies its writers one after
    # another, each kicking the one before behind the run queue, so the writers fall
    # behind and most drops are theirs.
    def point(rate: int, event_loop: bool) -> dict[str, int]:
        cpu = {"costs": "measured", "nodes_per_host": 20, "cores": 1, "event_loop": event_loop}
        data = {
            "name": f"cliff-{rate}",
            "topology": {"kind": "barabasi-albert", "nodes": 20, "m": 4},
            "network": {"latency": "10ms"},
            "cpu": cpu,
            "workload": {"rate": f"{rate}/s", "duration": "3s", "warmup": "2s", "cooldown": "2s"},
        }
        out = tmp_path / f"{rate}-{event_loop}"
        summary = run(parse_scenario(data, tmp_path), out).summary
        by_kind = summary["drops"]["by_kind"].get("payload", {})
        return {reason: int(count) for reason, count in by_kind.items()}

    assert point(50, True) == {}
    without = point(400, False)
    assert without.get("outbound-queue-full", 0) > without.get("validation-queue-full", 0) > 0
    # With the loop, parked readers push the overload back to the senders, and copies
    # of one message queued for validation before the first is marked seen still fill
    # the validation queue (validation.go:validate marks seen after the check): both.
    with_loop = point(400, True)
    assert with_loop.get("outbound-queue-full", 0) > 0, with_loop
    assert with_loop.get("validation-queue-full", 0) > 0, with_loop


def test_a_model_report_says_which_cpu_it_charged(tmp_path: Path) -> None:
    data = {
        "topology": {"kind": "line", "nodes": 3},
        "cpu": {"per_copy": "50us"},
        "workload": {"messages": 2, "warmup": "0s", "cooldown": "1s"},
    }
    result = run(parse_scenario(data, tmp_path), tmp_path / "run")
    page = result.report.read_text(encoding="utf-8")
    assert "CPU per hop" in page and "validate 50 µs/copy; own host, 1 core" in page


def test_rpcs_that_arrive_together_share_their_readers_wake_up(tmp_path: Path) -> None:
    # Two nodes, 10 ms apart; each batch is two messages published at once by one node,
    # so both RPCs reach the other node's reading goroutine at 10 ms. The first wakes it
    # (1 ms) and is read (2 ms): 13 ms; the second, there while the reader runs, shares
    # that wake-up: 15 ms (16 if every RPC paid one, 14 if none did).
    data = {
        "topology": {"kind": "line", "nodes": 2},
        "network": {"latency": "10ms"},
        "cpu": {"per_read_wakeup": "1ms", "per_rpc_received": "2ms"},
        "workload": {
            "messages": 4,
            "batch": 2,
            "batch_publisher": "same",
            "rate": "1/s",
            "warmup": "1s",
            "cooldown": "1s",
        },
    }
    latency = run(parse_scenario(data, tmp_path), tmp_path / "run").summary["receipt_latency_ms"]
    assert (latency["count"], latency["min"], latency["max"]) == (4, 13.0, 15.0)


def test_the_report_line_gives_the_costs_at_the_hosts_speed() -> None:
    cpu = {"per_copy": "50us", "per_validator_turn": "30us", "nodes_per_host": 2, "speed": 2}
    line = cpu_per_hop(parse_scenario({"cpu": cpu}, HERE))
    assert "validate 25 µs/copy" in line
    assert "per goroutine turn: validator 15 µs" in line
    assert "hosts 2× as fast as the machine the costs were measured on" in line


def test_the_report_line_names_the_costs_per_goroutine_turn() -> None:
    turns = {"nodes_per_host": 40, "event_loop": True, "per_writer_turn": "4us"}
    turns |= {"per_loop_turn": "2.5us"}
    line = cpu_per_hop(parse_scenario({"cpu": turns}, HERE))
    assert line.startswith("per goroutine turn: writer 4 µs, event loop 2.5 µs; 40 nodes")
    line = cpu_per_hop(parse_scenario({"cpu": {**turns, "per_copy": "60us"}}, HERE))
    assert line.startswith("validate 60 µs/copy; per goroutine turn: writer 4 µs, event loop")
    assert "sysmon" not in line
    line = cpu_per_hop(parse_scenario({"cpu": {**turns, "sysmon": True}}, HERE))
    assert line.endswith("4 ms tick or wake-up, each node's sysmon waking the kernel")
    costed = {**turns, "sysmon": True, "per_sysmon_round": "11us"}
    line = cpu_per_hop(parse_scenario({"cpu": costed}, HERE))
    assert line.endswith("each node's sysmon waking the kernel (11 µs a round)")
    shared = {**costed, "send_loop_syscall_share": 0.82, "recv_loop_syscall_share": 0.34}
    line = cpu_per_hop(parse_scenario({"cpu": shared}, HERE))
    assert line.endswith(
        "(11 µs a round), in a system call for 82% of a write's CPU and 34% of a read's"
    )


def test_a_turn_cost_on_a_host_without_time_slices_names_the_field() -> None:
    with pytest.raises(ScenarioError, match=r"cpu\.per_writer_turn .* time-sliced hosts only"):
        parse_scenario({"cpu": {"per_writer_turn": "4us"}}, HERE)
    with pytest.raises(ScenarioError, match=r"cpu\.event_loop = false"):
        parse_scenario({"cpu": {"event_loop": True, "nodes_per_host": 2, "cores": 2}}, HERE)
    # Go's sysmon matters to the model only where the kernel picks among nodes.
    with pytest.raises(ScenarioError, match=r"cpu\.sysmon .* time-sliced .*cpu\.sysmon = false"):
        parse_scenario({"cpu": {"sysmon": True}}, HERE)
    # A round's cost without sysmon would charge nothing.
    with pytest.raises(ScenarioError, match=r"cpu\.per_sysmon_round .*cpu\.sysmon = true"):
        parse_scenario({"cpu": {"nodes_per_host": 2, "per_sysmon_round": "11us"}}, HERE)
    # Where sysmon finds yamux's goroutines in a call needs both.
    looped = {"nodes_per_host": 2, "event_loop": True, "send_loop_syscall_share": 0.8}
    with pytest.raises(ScenarioError, match=r"cpu\.send_loop_syscall_share .*cpu\.sysmon = true"):
        parse_scenario({"cpu": looped}, HERE)
    with pytest.raises(ScenarioError, match=r"cpu\.recv_loop_syscall_share"):
        parse_scenario({"cpu": {**looped, "sysmon": True, "recv_loop_syscall_share": 0}}, HERE)


def test_a_cost_of_the_event_loop_s_goroutines_without_the_loop_names_the_field() -> None:
    # pubsub's loop and yamux's sendLoop and recvLoop are goroutines of the model only
    # with the event loop (crates/engine/src/goroutines.rs): their costs would do nothing.
    shared = {"nodes_per_host": 40}
    for name in ("per_recv_loop_turn", "per_send_loop_turn", "per_rpc_loop"):
        with pytest.raises(ScenarioError, match=rf"cpu\.{name} .*cpu\.event_loop = true"):
            parse_scenario({"cpu": {**shared, name: "4us"}}, HERE)
    looped = parse_scenario(
        {"cpu": {**shared, "event_loop": True, "per_recv_loop_turn": "4us"}}, HERE
    )
    assert looped.cpu.per_recv_loop_turn == 4_000


def test_recorded_goroutine_waits_are_written_for_the_nodes_named(tmp_path: Path) -> None:
    # Two nodes on one time-sliced core at the measured costs (the event loop on), a
    # message a second; node 1's goroutines' waits are recorded (crates/engine/src/
    # goroutines.rs has the timelines). Copies a second apart find node 1 idle: each copy
    # it validates is a turn of its validation worker of its own.
    data = {
        "topology": {"kind": "line", "nodes": 2},
        "cpu": {"costs": "measured", "nodes_per_host": 2, "record_waits": [1]},
        "workload": {"messages": 4, "rate": "1/s", "warmup": "1s", "cooldown": "1s"},
    }
    run(parse_scenario(data, tmp_path), tmp_path / "run")
    waits = pl.read_parquet(tmp_path / "run" / "goroutine_waits.parquet")
    assert set(waits["node"].to_list()) == {1}
    counts = dict(waits.group_by("goroutine").len().iter_rows())
    goroutines = {"reader", "event loop", "validator", "yamux sendLoop", "yamux recvLoop"}
    assert goroutines | {"node thread", "sysmon"} <= set(counts)
    deliveries = pl.read_parquet(tmp_path / "run" / "deliveries.parquet")
    assert counts["validator"] == deliveries.filter(pl.col("node") == 1).height
    # What readied each, as go-libp2p-pubsub hands work on: the validation worker, the
    # event loop (its push on validateQ, goready); the loop, the reader (its send on
    # incoming) and the worker (its send on sendMsg); the reader, yamux's recvLoop
    # (recvNotifyCh); recvLoop, the netpoller (the node idle a second between copies);
    # the sendLoop, a writer (sendCh). The node's own waits: nothing. Its sysmon's rounds
    # say where the node was when sysmon woke: running (the system call that ends its
    # deep sleep, as each copy wakes the node), then idle (its next round finds the node
    # done, and it sleeps deeply again).
    pairs = waits.group_by("goroutine").agg(pl.col("readied_by").unique().sort()).iter_rows()
    readied = dict(pairs)
    assert readied["validator"] == ["event loop"]
    assert readied["event loop"] == ["reader", "validator"]
    assert readied["reader"] == ["yamux recvLoop"]
    assert readied["yamux recvLoop"] == ["netpoll"]
    assert readied["yamux sendLoop"] == ["writer"]
    assert readied["node thread"] == [None]
    assert readied["sysmon"] == ["node idle", "node running"]
    plain = {**data, "cpu": {"costs": "measured", "nodes_per_host": 2}}
    run(parse_scenario(plain, tmp_path), tmp_path / "plain")
    assert not (tmp_path / "plain" / "goroutine_waits.parquet").exists()


def test_recording_waits_names_the_field_when_it_cannot() -> None:
    with pytest.raises(ScenarioError, match=r"cpu\.record_waits .* time-sliced hosts only"):
        parse_scenario({"cpu": {"record_waits": [0]}}, HERE)
    with pytest.raises(ScenarioError, match=r"cpu\.record_waits"):
        parse_scenario(
            {
                "topology": {"kind": "line", "nodes": 2},
                "cpu": {"nodes_per_host": 2, "record_waits": [5]},
            },
            HERE,
        )
