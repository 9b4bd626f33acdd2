"""bench/softirq_context.py sorts softirq samples by where they ran: checked on a
hand-written `perf script` output whose every sample's class is known."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from softirq_context import classify, context_of


def _sample(comm: str, *frames: str) -> str:
    head = f"{comm} 24203 [001] 61693.659269:     250000 cpu-clock:ppp: "
    body = "\n".join(f"\tffffffff8136013d {frame}+0x72 ([kernel.kallsyms])" for frame in frames)
    return f"{head}\n{body}\n"


# Innermost frame first, as perf prints them.
IN_WRITE = _sample(
    "gossiplab-node",
    "process_backlog",
    "net_rx_action",
    "handle_softirqs",
    "do_softirq",
    "__dev_queue_xmit",
    "tcp_write_xmit",
    "tcp_sendmsg",
    "ksys_write",
    "do_syscall_64",
)
# An interrupt taken inside a write syscall still counts for the write.
IRQ_IN_WRITE = _sample(
    "gossiplab-node",
    "handle_softirqs",
    "__irq_exit_rcu",
    "sysvec_apic_timer_interrupt",
    "asm_sysvec_apic_timer_interrupt",
    "_raw_spin_unlock_irqrestore",
    "tcp_write_xmit",
    "ksys_write",
)
IN_READ = _sample(
    "gossiplab-node",
    "net_rx_action",
    "handle_softirqs",
    "do_softirq",
    "tcp_recvmsg",
    "ksys_read",
)
# The pacing timer's transmit and the forwarding it raises, at a timer interrupt's exit
# while the node ran its own code.
PACED = _sample(
    "gossiplab-node",
    "nf_queue",
    "net_rx_action",
    "tcp_write_xmit",
    "tcp_tsq_handler",
    "tcp_pace_kick",
    "hrtimer_run_softirq",
    "handle_softirqs",
    "__irq_exit_rcu",
    "sysvec_apic_timer_interrupt",
    "asm_sysvec_apic_timer_interrupt",
)
FORWARDED = _sample(
    "gossiplab-node",
    "nf_queue",
    "net_rx_action",
    "handle_softirqs",
    "__irq_exit_rcu",
    "sysvec_apic_timer_interrupt",
    "asm_sysvec_apic_timer_interrupt",
)
ELSEWHERE = _sample("gossiplab-node", "rcu_core", "handle_softirqs", "run_ksoftirqd")
NOT_SOFTIRQ = _sample("gossiplab-node", "feMul.abi0", "validateWorker")
OTHER_PROCESS = _sample("kworker/1:2", "net_rx_action", "handle_softirqs", "ksys_write")

TEXT = "\n".join(
    [IN_WRITE, IRQ_IN_WRITE, IN_READ, PACED, FORWARDED, ELSEWHERE, NOT_SOFTIRQ, OTHER_PROCESS]
)


def test_each_sample_lands_where_its_stack_says() -> None:
    c = classify(TEXT)
    assert c.samples == 7  # the kworker's is not a node's
    assert dict(c.by_context) == {"write": 2, "read": 1, "timer interrupt": 2, "other": 1}
    assert c.softirq == 6
    assert dict(c.timer_work) == {"pacing timer": 1, "packet forwarding": 2}


def test_a_stack_without_a_softirq_has_no_context() -> None:
    assert context_of(["feMul.abi0", "validateWorker"]) is None
    assert context_of(["handle_softirqs", "ksys_read"]) == "read"
