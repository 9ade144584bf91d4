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


def connect(bootstrap: str, properties: dict[str, str] | None = None, timeout: float = 10.0,
            client_id: str = "minikafka-tools") -> WireClient:
    """A WireClient configured as a Kafka client would be by ``--command-config`` properties:
    ``security.protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), ``ssl.truststore.location``
    (PEM; ``ssl.truststore.type=PEM``), ``ssl.keystore.location`` (PEM key + certificate),
    ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256/512) with ``sasl.jaas.config`` naming
    ``username`` and ``password`` (and ``tokenauth="true"`` for a delegation token: its id and
    base64 HMAC)."""
    props = dict(properties or {})
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    client = WireClient.to(bootstrap, timeout=timeout, client_id=client_id)
    if protocol in ("SSL", "SASL_SSL"):
        import ssl
        ctx = ssl.create_default_context(cafile=props.get("ssl.truststore.location"))
        if props.get("ssl.endpoint.identification.algorithm", "https") == "":
            ctx.check_hostname = False
        if props.get("ssl.keystore.location"):
            ctx.load_cert_chain(props["ssl.keystore.location"], password=props.get("ssl.key.password"))
        client.sock = ctx.wrap_socket(client.sock, server_hostname=bootstrap.rsplit(":", 1)[0].strip("[]"))
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        _sasl_login(client, props.get("sasl.mechanism", "GSSAPI").upper(), props.get("sasl.jaas.config", ""))
    return client


def _sasl_login(client: WireClient, mechanism: str, jaas: str) -> None:
    import base64
    import secrets
    from minikafka.broker.security.sasl import SCRAM_HASHES, parse_jaas
    try:
        _, options = parse_jaas(jaas)
    except ValueError as e:
        raise ConnectionError(f"invalid sasl.jaas.config: {e}") from None
    user, password = options.get("username", ""), options.get("password", "")
    hs = client.request(17, 1, {"mechanism": mechanism})
    if hs.error_code:
        raise ConnectionError(f"SASL mechanism {mechanism} not enabled by the broker (enabled: {', '.join(hs.mechanisms)})")

    def step(token: bytes) -> bytes:
        r = client.request(36, 2, {"auth_bytes": token})
        if r.error_code:
            raise ConnectionError(r.error_message or f"SASL authentication failed (error {r.error_code})")
        return r.auth_bytes

    if mechanism == "PLAIN":
        step(f"\0{user}\0{password}".encode())
        return
    if mechanism not in SCRAM_HASHES:
        raise ConnectionError(f"SASL mechanism {mechanism} is not supported by this tool")
    name = user.replace("=", "=3D").replace(",", "=2C")
    first_bare = f"n={name},r={base64.b64encode(secrets.token_bytes(18)).decode()}"
    if options.get("tokenauth", "").lower() == "true":
        # a delegation token (Kafka's ScramLoginModule tokenauth option): the SCRAM extension
        first_bare += ",tokenauth=true"
    server_first = step(("n,," + first_bare).encode()).decode()
    client_final, server_final = scram_client_final(mechanism, password, first_bare, server_first)
    if step(client_final) != server_final:
        raise ConnectionError("the broker's SCRAM signature is wrong: not the broker holding these credentials")


def scram_client_final(mechanism: str, password: str, first_bare: str, server_first: str) -> tuple[bytes, bytes]:
    """The client side of RFC 5802 after the server-first message: (client-final message, the
    server-final message the broker holding these credentials must answer)."""
    import base64
    import hashlib
    import hmac
    from minikafka.broker.security.sasl import SCRAM_HASHES
    h = SCRAM_HASHES[mechanism]
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(h().name, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    final_bare = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first},{final_bare}".encode()
    client_key = hmac.new(salted, b"Client Key", h).digest()
    signature = hmac.new(h(client_key).digest(), auth, h).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    server_sig = hmac.new(hmac.new(salted, b"Server Key", h).digest(), auth, h).digest()
    return f"{final_bare},p={proof}".encode(), b"v=" + base64.b64encode(server_sig)


def read_command_config(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    from minikafka.broker.config import read_properties
    return read_properties(path)
