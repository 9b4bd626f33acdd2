"""bench/cpu_profile_goroutines.py: which goroutine, and which part of the event loop, a
sampled stack belongs to (frames leaf first, as `go tool pprof -traces` prints them)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from cpu_profile_goroutines import DRIVER, NAMES, goroutine

PS = "github.com/libp2p/go-libp2p-pubsub."
LOOP = [PS + "(*PubSub).processLoop", "runtime.goexit"]
PUBLISH = [PS + "(*PubSub).publishMessage", *LOOP]


def test_publish_message_splits_into_its_send_rpc_calls_and_the_rest() -> None:
    # gossipsub.go:Publish calls sendRPC once per peer forwarded to: counted per forward.
    send = ["runtime.memmove", PS + "(*GossipSubRouter).sendRPC", PS + "(*GossipSubRouter).Publish"]
    assert goroutine(send + PUBLISH) == "loop: publishMessage, sendRPC"
    deliver = [PS + "(*PubSub).notifySubs", *PUBLISH]
    assert goroutine(deliver) == "loop: publishMessage, the rest"
    assert DRIVER["loop: publishMessage, sendRPC"] == "forwards"
    assert DRIVER["loop: publishMessage, the rest"] == "delivered"


def test_other_loop_parts_and_goroutines_keep_their_names() -> None:
    incoming = [PS + "(*GossipSubRouter).sendRPC", PS + "(*PubSub).handleIncomingRPC", *LOOP]
    assert goroutine(incoming) == "loop: handleIncomingRPC"
    assert goroutine(["runtime.selectgo", *LOOP]) == "loop: select and the rest"
    validator = ["crypto/ed25519.Verify", PS + "(*validation).validateWorker", "runtime.goexit"]
    assert goroutine(validator) == "validator"
    assert goroutine(["main.main"]) == "other"
    assert "loop: publishMessage" not in NAMES and set(DRIVER) == set(NAMES)
