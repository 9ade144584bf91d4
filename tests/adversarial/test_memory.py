"""Memory bounded under any input: an announced request size allocates nothing by itself (the
buffer grows as bytes arrive), and queued.max.request.bytes bounds the requests being read: once
it is used up, large requests are not read until memory is freed (small ones still are), as
Kafka's memory pool does. The bystander keeps working throughout."""
from __future__ import annotations

import contextlib
import ssl
import struct

from harness import BrokerProcess, free_port, wait_until
from rawclient import RawClient, make_batch
from security_kit import make_certs

from .hostile import connect, metric, outcome, rss_mb

MB = 1 << 20


def announce(size: int, send: int) -> bytes:
    """The start of a Produce request announcing ``size`` bytes, ``send`` bytes of it."""
    head = struct.pack(">ihhi", size, 0, 9, 1)
    return head + b"\0" * (send - len(head) + 4)


def test_announced_sizes_allocate_nothing(tmp_path, bystander):
    """300 plaintext and 50 TLS connections each announcing 100 MB (socket.request.max.bytes) and
    sending 70 KB: the broker grows by about what arrived, not by 35 GB; when they go, the pool is
    empty again."""
    certs = make_certs(tmp_path / "certs")
    tls_port, metrics_port = free_port(), free_port()
    b = BrokerProcess(tmp_path / "data", name="announce")
    b.overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{b.port},SSL://127.0.0.1:{tls_port}",
                   "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server),
                   "metrics.listener": f"127.0.0.1:{metrics_port}"}
    with b:
        by = bystander(b.bootstrap)
        idle = rss_mb(b.pid)
        ctx = ssl.create_default_context(cafile=str(certs.ca))
        with contextlib.ExitStack() as stack:
            for _ in range(300):
                stack.enter_context(connect(b.bootstrap)).sendall(announce(100 * MB, 70 * 1024))
            for _ in range(50):
                s = ctx.wrap_socket(stack.enter_context(connect(f"127.0.0.1:{tls_port}")),
                                    server_hostname="127.0.0.1")
                stack.enter_context(s).sendall(announce(100 * MB, 70 * 1024))
            wait_until(lambda: metric(metrics_port, "kafka_network_socketserver_memorypoolused")
                       >= 350 * 60 * 1024, 30)
            by.wait_progress()
            grown = rss_mb(b.pid) - idle
            assert grown < 200, f"{grown:.0f} MB for 350 x 70 KB"
        wait_until(lambda: metric(metrics_port, "kafka_network_socketserver_memorypoolused") == 0, 10)
        by.wait_progress()
        by.stop()
    by.check()


def test_a_used_up_pool_stops_large_requests_until_memory_is_freed(tmp_path, bystander):
    """queued.max.request.bytes=2 MB (socket.request.max.bytes=1 MB): 20 connections each start a
    1 MB request and stall. A producer's 500 KB batch then waits (the broker reads no large request
    until memory is freed); small requests are served meanwhile; once the stalled connections go,
    the batch is written."""
    metrics_port = free_port()
    b = BrokerProcess(tmp_path / "data", name="pool", overrides={
        "socket.request.max.bytes": MB, "queued.max.request.bytes": 2 * MB, "message.max.bytes": MB,
        "metrics.listener": f"127.0.0.1:{metrics_port}"})
    with b:
        by = bystander(b.bootstrap)
        with RawClient.to(b.bootstrap) as admin:
            assert admin.create_topic("pool") == 0
        stalled = [connect(b.bootstrap) for _ in range(20)]
        for s in stalled:
            s.sendall(announce(MB - 100, 200 * 1024))
        wait_until(lambda: metric(metrics_port, "kafka_network_socketserver_memorypoolavailable") == 0, 10)
        with RawClient.to(b.bootstrap) as producer:
            producer.send(0, 9, {"transactional_id": None, "acks": 1, "timeout_ms": 10000, "topic_data": [
                {"name": "pool", "partition_data": [{"index": 0, "records": make_batch([b"x" * 500_000])}]}]})
            assert outcome(producer.sock, 1.0) == "pending"  # not read: no memory for it
            by.wait_progress()  # small requests still flow
            assert metric(metrics_port, "kafka_server_socketservermetrics_memory_pool_depleted_seconds_total") > 0
            for s in stalled:  # their clients give up: the memory is freed, the batch is read
                s.close()
            assert outcome(producer.sock, 10) == "answered"
            assert producer.list_offset("pool", 0) == 1
        wait_until(lambda: metric(metrics_port, "kafka_network_socketserver_memorypoolused") == 0, 10)
        by.wait_progress()
        by.stop()
    by.check()
