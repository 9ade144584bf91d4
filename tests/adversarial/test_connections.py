"""Many connections: Kafka's connection limits (max.connections per broker and per listener,
max.connections.per.ip with its overrides, max.connection.creation.rate), each with Kafka's
behaviour at the limit, while a well-behaved producer and read_committed consumer keep working."""
from __future__ import annotations

import contextlib
import time

import pytest

from harness import BrokerProcess, free_port, wait_until

from .hostile import ask, connect, metric, outcome

HOSTILE_IP = "127.0.0.2"  # a loopback address of its own (Linux routes all of 127/8 to lo)


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """PLAINTEXT (the bystander's), HOSTILE (at most 4 connections) and RATE (10 new connections a
    second); 3 connections per address, 50 for 127.0.0.1."""
    ports = {"HOSTILE": free_port(), "RATE": free_port()}
    metrics_port = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp("limited") / "data", name="limited")
    b.overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{b.port},HOSTILE://127.0.0.1:{ports['HOSTILE']},"
                     f"RATE://127.0.0.1:{ports['RATE']}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,HOSTILE:PLAINTEXT,RATE:PLAINTEXT",
        "max.connections.per.ip": 3, "max.connections.per.ip.overrides": "127.0.0.1:500",
        "listener.name.hostile.max.connections": 4, "listener.name.rate.max.connection.creation.rate": 10,
        "metrics.listener": f"127.0.0.1:{metrics_port}"}
    b.addresses = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
    b.metrics_port = metrics_port
    try:
        b.start()
        yield b
    finally:
        b.close()


def test_past_its_address_limit_a_connection_is_closed_at_once(limited, bystander):
    by = bystander(limited.bootstrap)
    before = metric(limited.metrics_port, "minikafka_connections_rejected_per_ip_total", listener="PLAINTEXT")
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(connect(limited.bootstrap, HOSTILE_IP)) for _ in range(3)]
        assert [ask(s) for s in held] == ["answered"] * 3
        extra = stack.enter_context(connect(limited.bootstrap, HOSTILE_IP))
        assert outcome(extra, 10) == "closed"  # accepted, then closed without a byte (Kafka's Acceptor)
        by.wait_progress()  # 127.0.0.1's override lets the bystander connect and work
        held[0].close()
        # a slot of that address is free again once the broker sees the close
        wait_until(lambda: ask(stack.enter_context(connect(limited.bootstrap, HOSTILE_IP)), 5) == "answered", 10)
    assert (f"Rejected connection from /{HOSTILE_IP}, address already has the configured maximum of 3 connections."
            in limited.log_text())
    assert metric(limited.metrics_port, "minikafka_connections_rejected_per_ip_total", listener="PLAINTEXT") > before
    by.wait_progress()


def test_at_a_listener_limit_new_connections_wait_until_one_closes(limited, bystander):
    by = bystander(limited.bootstrap)
    address = limited.addresses["HOSTILE"]
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(connect(address)) for _ in range(4)]
        assert [ask(s) for s in held] == ["answered"] * 4
        waiting = stack.enter_context(connect(address))  # the kernel completes the handshake ...
        assert ask(waiting, 0.5) == "pending"  # ... but the broker does not serve it yet
        assert ask(stack.enter_context(connect(limited.bootstrap)), 5) == "answered"  # other listeners do
        by.wait_progress()
        held.pop().close()
        assert outcome(waiting, 10) == "answered"  # served once a slot is free
    assert "Listener HOSTILE has reached its connection limit" in limited.log_text()
    wait_until(lambda: metric(limited.metrics_port, "kafka_network_acceptor_acceptorblocked_seconds_total",
                              listener="HOSTILE") > 0, 10)
    by.wait_progress()


def test_past_the_creation_rate_accepting_is_delayed(limited, bystander):
    """10 a second over Kafka's window (at least 10 s): 100 connections at once pass, the next ones
    are spaced out (about 100 ms each); other listeners are not slowed."""
    by = bystander(limited.bootstrap)
    address = limited.addresses["RATE"]
    for _ in range(100):
        with connect(address) as s:
            assert ask(s) == "answered"
    start = time.monotonic()
    for _ in range(5):
        with connect(address) as s:
            assert ask(s) == "answered"
    spent = time.monotonic() - start
    assert 0.3 < spent < 8, spent
    start = time.monotonic()
    with connect(limited.bootstrap) as s:
        assert ask(s) == "answered"
    assert time.monotonic() - start < 2
    assert metric(limited.metrics_port, "kafka_server_socketservermetrics_connection_accept_throttle_seconds_total",
                  listener="RATE") > 0.2
    by.wait_progress()


def test_at_the_broker_limit_every_listener_waits(tmp_path, bystander):
    """max.connections=6: with the bystander's two connections and four more, a seventh waits."""
    b = BrokerProcess(tmp_path / "data", name="max-connections", overrides={"max.connections": 6})
    with b:
        by = bystander(b.bootstrap)
        with contextlib.ExitStack() as stack:
            held = []
            while True:  # up to the limit (the bystander's connections count)
                s = stack.enter_context(connect(b.bootstrap))
                if ask(s, 1) != "answered":
                    waiting = s
                    break
                held.append(s)
            assert len(held) == 4
            assert outcome(waiting, 0.5) == "pending"
            by.wait_progress()  # connections already open keep working
            held.pop().close()
            assert outcome(waiting, 10) == "answered"
        by.stop()
        by.check()
