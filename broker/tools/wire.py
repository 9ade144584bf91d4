"""A small blocking Kafka client on protocol/: used by the operator subcommands
(healthcheck, transactions) and by the tests for exact frames."""
from __future__ import annotations

import socket
import struct

from minikafka.protocol import schema


class WireClient:
    def __init__(self, host: str, port: int, timeout: float = 10.0, client_id: str = "minikafka-tools"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self.corr = 0

    @classmethod
    def to(cls, bootstrap: str, **kw) -> "WireClient":
        host, port = bootstrap.rsplit(":", 1)
        return cls(host, int(port), **kw)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --------------------------------------------------------------- frames
    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(payload)

    def recv_frame(self) -> bytes | None:
        head = self._recv_exact(4)
        if head is None:
            return None
        (n,) = struct.unpack(">i", head)
        return self._recv_exact(n)

    def _recv_exact(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True once the broker closed the connection (EOF or reset) within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    # ------------------------------------------------------------- requests
    def send(self, api_key: int, version: int, body: dict) -> int:
        self.corr += 1
        self.sock.sendall(schema.encode_request(api_key, version, self.corr, self.client_id, body))
        return self.corr

    def receive(self, api_key: int, version: int, corr: int):
        frame = self.recv_frame()
        if frame is None:
            raise ConnectionError("broker closed the connection")
        got, body = schema.decode_response(api_key, version, frame)
        assert got == corr, f"correlation id {got} != {corr}"
        return body

    def request(self, api_key: int, version: int, body: dict):
        return self.receive(api_key, version, self.send(api_key, version, body))
