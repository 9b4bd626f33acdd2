"""bench/cpu_profile_families.py: a profile sample's family is its first frame from the
leaf up that names one (stacks as `go tool pprof -traces` prints them, leaf first)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
from cpu_profile_families import _ms, family


def test_a_write_syscall_under_noise_is_the_write_path() -> None:
    stack = [
        "internal/runtime/syscall/linux.Syscall6",
        "syscall.RawSyscall6",
        "syscall.Syscall",
        "syscall.write",
        "internal/poll.(*FD).Write",
        "github.com/libp2p/go-libp2p/p2p/security/noise.(*secureSession).Write",
        "github.com/libp2p/go-yamux/v5.(*Session).sendLoop",
    ]
    assert family(stack) == "write"


def test_epoll_in_the_scheduler_is_the_read_path_and_a_futex_is_a_wake_up() -> None:
    netpoll = [
        "internal/runtime/syscall/linux.EpollWait",
        "runtime.netpoll",
        "runtime.findRunnable",
        "runtime.schedule",
    ]
    assert family(netpoll) == "read"
    futex = [
        "runtime.futex",
        "runtime.notewakeup",
        "runtime.startm",
        "runtime.wakep",
        "runtime.ready",
        "runtime.chansend",
        "github.com/libp2p/go-libp2p-pubsub.(*PubSub).handleNewStream",
    ]
    assert family(futex) == "wakeups", "the leaf-most named frame decides, not pubsub"


def test_signature_checks_pubsub_and_the_rest() -> None:
    verify = [
        "crypto/internal/fips140/edwards25519/field.feMul",
        "crypto/ed25519.Verify",
        "github.com/libp2p/go-libp2p-pubsub.(*validation).validateWorker",
    ]
    assert family(verify) == "ed25519"
    assert family(["runtime.memmove", "google.golang.org/protobuf/proto.Size"]) == "pubsub"
    assert family(["runtime.memmove", "main.main"]) == "other"


def test_sample_values_in_milliseconds() -> None:
    assert (_ms("10ms"), _ms("1.20s"), _ms("500us")) == (10.0, 1200.0, 0.5)
