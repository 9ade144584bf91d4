"""connections.max.idle.ms: the broker closes a connection that has been idle that long, as
Kafka's SocketServer does; never one that keeps sending, nor one whose request is still being
answered (a long-poll Fetch waiting longer than the idle limit)."""
from __future__ import annotations

import socket
import time

import pytest

from harness import wait_until
from rawclient import RawClient

IDLE_MS = 600


@pytest.fixture(scope="module")
def idle_broker(tmp_path_factory):
    from harness import BrokerProcess
    b = BrokerProcess(tmp_path_factory.mktemp("idle") / "data", overrides={"connections.max.idle.ms": IDLE_MS},
                      name="idle")
    b.start()
    try:
        yield b
    finally:
        b.close()


def closed_by_peer(c: RawClient) -> bool:
    """The broker closed the connection (EOF), without blocking."""
    c.sock.setblocking(False)
    try:
        return c.sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        c.sock.setblocking(True)


def test_an_idle_connection_is_closed(idle_broker):
    with RawClient.to(idle_broker.bootstrap) as c:
        c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        answered = time.monotonic()
        wait_until(lambda: closed_by_peer(c), 10, message="the idle connection is still open")
        assert time.monotonic() - answered >= IDLE_MS / 1000 * 0.9  # not before it was idle that long


def test_a_connection_that_keeps_sending_stays_open(idle_broker):
    with RawClient.to(idle_broker.bootstrap) as c:
        start = time.monotonic()
        while time.monotonic() - start < 3 * IDLE_MS / 1000:
            assert c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
            time.sleep(IDLE_MS / 1000 / 3)  # pacing the client's own requests (not synchronisation)
        assert not closed_by_peer(c)


def test_a_long_poll_longer_than_the_idle_limit_is_answered(idle_broker):
    with RawClient.to(idle_broker.bootstrap) as c:
        assert c.create_topic("idle-poll", 1) == 0
        wait = 3 * IDLE_MS
        start = time.monotonic()
        p = c.fetch("idle-poll", 0, 0, max_wait_ms=wait)  # nothing to read: waits max_wait_ms
        assert p.error_code == 0 and time.monotonic() - start >= wait / 1000 * 0.9
        assert not closed_by_peer(c)


def test_negative_disables_idle_expiry(tmp_path):
    """(Kafka: a negative value turns idle expiry off; it must not close at once.)"""
    from harness import BrokerProcess
    b = BrokerProcess(tmp_path / "data", overrides={"connections.max.idle.ms": -1}, name="idle-off")
    b.start()
    try:
        host, port = b.bootstrap.split(":")
        with socket.create_connection((host, int(port))) as s:
            s.settimeout(1.5)
            with pytest.raises(socket.timeout):
                s.recv(1)  # nothing arrives, and no EOF either
    finally:
        b.close()
