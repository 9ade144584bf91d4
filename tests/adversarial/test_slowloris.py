"""Slow and stuck clients: connections.max.idle.ms counts from the last bytes read or written, as
Kafka's Selector does, so a connection stuck in a frame, a TLS handshake, a SASL exchange or an
answer it never reads is closed (and its memory given back), while one that keeps trickling
bytes is served; the bystander keeps working meanwhile."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from harness import BrokerProcess, free_port, wait_until
from rawclient import RawClient, make_batch
from security_kit import make_certs, plain_jaas

from .hostile import API_VERSIONS, connect, metric, outcome

IDLE_MS = 1000


@pytest.fixture(scope="module")
def idle(tmp_path_factory):
    d = tmp_path_factory.mktemp("slowloris")
    certs = make_certs(d / "certs")
    ports = {"SSL": free_port(), "SASL_PLAINTEXT": free_port()}
    metrics_port = free_port()
    b = BrokerProcess(d / "data", name="slowloris")
    b.overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{b.port},SSL://127.0.0.1:{ports['SSL']},"
                     f"SASL_PLAINTEXT://127.0.0.1:{ports['SASL_PLAINTEXT']}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server),
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas({"alice": "alice-secret"}),
        "connections.max.idle.ms": IDLE_MS, "metrics.listener": f"127.0.0.1:{metrics_port}"}
    b.addresses = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
    b.metrics_port = metrics_port
    try:
        b.start()
        yield b
    finally:
        b.close()


def closed_after(sock: socket.socket, since: float) -> float:
    """Seconds from ``since`` until the broker closed the connection (fails if it answers or waits 10 s)."""
    assert outcome(sock, 10) == "closed"
    return time.monotonic() - since


@pytest.mark.parametrize("stuck", ["in a frame", "in a large frame", "before a TLS handshake",
                                   "in a TLS handshake", "in a SASL exchange"])
def test_a_stuck_connection_is_closed_after_the_idle_time(idle, bystander, stuck):
    by = bystander(idle.bootstrap)
    address = {"before a TLS handshake": "SSL", "in a TLS handshake": "SSL",
               "in a SASL exchange": "SASL_PLAINTEXT"}.get(stuck)
    with connect(idle.addresses[address] if address else idle.bootstrap) as s:
        if stuck == "in a frame":
            s.sendall(API_VERSIONS[:-5])
        elif stuck == "in a large frame":
            s.sendall(struct.pack(">ihhi", 10 << 20, 0, 9, 1) + b"\0" * 300_000)
            wait_until(lambda: metric(idle.metrics_port, "kafka_network_socketserver_memorypoolused") > 0, 10)
        elif stuck == "in a TLS handshake":
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # the start of a ClientHello
        elif stuck == "in a SASL exchange":
            c = RawClient.__new__(RawClient)
            c.sock, c.client_id, c.corr = s, "t", 0
            assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
        last_io = time.monotonic()
        assert IDLE_MS / 1000 * 0.9 <= closed_after(s, last_io) < IDLE_MS / 1000 + 5
    if stuck == "in a large frame":  # its memory went back to the pool
        wait_until(lambda: metric(idle.metrics_port, "kafka_network_socketserver_memorypoolused") == 0, 10)
    by.wait_progress()


def test_a_connection_trickling_bytes_is_not_idle(idle, bystander):
    """One byte every 0.3 s (well within the idle time) for about three idle periods: still open,
    and answered once the frame is complete (Kafka counts idleness from the last bytes)."""
    by = bystander(idle.bootstrap)
    with connect(idle.bootstrap) as s:
        start = time.monotonic()
        sent = 0
        while time.monotonic() - start < 3 * IDLE_MS / 1000:
            s.sendall(API_VERSIONS[sent:sent + 1])
            sent += 1
            time.sleep(0.3)  # the slow client's pace (not synchronisation)
        assert sent < len(API_VERSIONS)
        s.sendall(API_VERSIONS[sent:])
        assert outcome(s, 10) == "answered"
    by.wait_progress()


def test_a_client_that_never_reads_its_answer_is_closed(idle, bystander):
    """A Fetch of 8 MB by a client with a tiny receive buffer that never reads: once its socket
    stops taking bytes for the idle time, the broker closes it."""
    by = bystander(idle.bootstrap)
    topic = "never-read"
    with RawClient.to(idle.bootstrap) as c:
        assert c.create_topic(topic) == 0
        for i in range(8):
            assert c.produce(topic, 0, make_batch([bytes([i]) * 1_000_000])).error_code == 0
    def connections() -> float:
        return metric(idle.metrics_port, "kafka_server_socketservermetrics_connection_count")

    wait_until(lambda: connections() == 2, 10)  # the bystander's
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    host, port = idle.bootstrap.rsplit(":", 1)
    s.connect((host, int(port)))
    with s:
        c = RawClient.__new__(RawClient)
        c.sock, c.client_id, c.corr = s, "t", 0
        c.send(1, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50 << 20,
                       "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                       "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                                    "partition_max_bytes": 50 << 20,
                                                                    "current_leader_epoch": -1,
                                                                    "log_start_offset": -1}]}]})
        start = time.monotonic()
        wait_until(lambda: connections() == 3, 10)
        wait_until(lambda: connections() == 2, IDLE_MS / 1000 + 10)  # closed by the broker (never read here)
        assert time.monotonic() - start >= IDLE_MS / 1000 * 0.9
    by.wait_progress()
