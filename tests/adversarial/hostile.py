"""Helpers of the adversarial suite: raw connections, whether a connection is answered or closed,
the broker's RSS and its Prometheus metrics."""
from __future__ import annotations

import re
import socket
import struct
import urllib.request

from minikafka.protocol import schema

API_VERSIONS = schema.encode_request(18, 3, 1, "hostile", {"client_software_name": "hostile",
                                                           "client_software_version": "1"})


def connect(address: str, source: str | None = None, timeout: float = 10.0) -> socket.socket:
    """A TCP connection to host:port, from the loopback address ``source`` if given."""
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout,
                                    source_address=(source, 0) if source else None)


def outcome(sock: socket.socket, timeout: float) -> str:
    """What the broker does next: "answered" (a frame comes), "closed" (EOF or reset) or "pending"."""
    sock.settimeout(timeout)
    try:
        head = sock.recv(4)
    except socket.timeout:
        return "pending"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    if not head:
        return "closed"
    (n,) = struct.unpack(">i", head.ljust(4, b"\0"))
    while n > 0:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return "closed"
        n -= len(chunk)
    return "answered"


def ask(sock: socket.socket, timeout: float = 10.0) -> str:
    """Send ApiVersions; the outcome."""
    try:
        sock.sendall(API_VERSIONS)
    except (BrokenPipeError, ConnectionResetError):
        return "closed"
    return outcome(sock, timeout)


def no_kafka_answer(sock: socket.socket, timeout: float = 10.0) -> bool:
    """Whatever comes back until the broker closes is nothing or a TLS alert: never a Kafka frame."""
    sock.settimeout(timeout)
    got = b""
    try:
        while chunk := sock.recv(4096):
            got += chunk
    except ConnectionResetError:
        pass
    return not got or got[:1] == b"\x15"


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def metric(port: int, name: str, **labels) -> float:
    """One sample of the broker's Prometheus endpoint (``metrics.listener``)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if m and m.group(1) == name and (m.group(2) or "") == want:
            return float(m.group(3))
    raise AssertionError(f"no sample {name}{{{want}}}")
