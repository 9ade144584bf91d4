"""Mutated requests of every advertised API against a live broker: each gets an answer
or a clean close, the broker keeps serving, and no handler raises (a handler error
would be logged as a traceback)."""
from __future__ import annotations

import random
import socket
import struct

from minikafka.protocol import schema
from rawclient import RawClient
from schema_samples import advertised as _advertised, sample as _sample

SKIP = {0, 1, 27}  # Produce/Fetch/WriteTxnMarkers with random data are covered by dedicated tests


def test_mutated_requests_never_break_the_broker(broker):
    rng = random.Random(7)
    sent = 0
    for key, version in _advertised():
        if key in SKIP:
            continue
        con = schema.message(key, "request", version)
        body = schema.build(con, _sample(con))
        for _ in range(3):
            data = bytearray(body)
            for _ in range(rng.randint(0, 3) if data else 0):
                data[rng.randrange(len(data))] = rng.randrange(256)
            head = struct.pack(">hhi", key, version, 1)
            if schema.request_header_version(key, version) >= 1:
                head += struct.pack(">h", 4) + b"fuzz"
            if schema.request_header_version(key, version) >= 2:
                head += b"\x00"
            frame = head + bytes(data)
            with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
                s.sendall(struct.pack(">i", len(frame)) + frame)
                s.settimeout(10)
                try:
                    s.recv(4)  # a response or EOF; either is fine
                except (ConnectionResetError, socket.timeout):
                    pass
            sent += 1
    assert sent > 100
    assert broker.running
    with RawClient.to(broker.bootstrap) as c:
        assert c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
    log = broker.log_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000:][:6000]
