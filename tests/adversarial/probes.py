"""Hostile exchanges written once and run against any broker: minikafka in the tests, Apache Kafka
4.1 by the recorder (``record_probes.py``), whose observations are the golden answers.

A probe is a function of a `Prober` (one fresh connection to one listener) that sends exact
bytes or requests and observes what comes back: each observation is the next answer frame (its
correlation id and the fields the probe names), ``"closed"`` (the broker closed the connection
without an answer) or ``"pending"`` (no answer and still open after ``PENDING_S``).
The probes: raw frames (sizes, truncation, array, string and tagged-field counts, varints,
garbage after a frame) and SASL misuse (requests before authentication, handshakes out of
order, bad passwords, huge names and tokens, SCRAM nonces and proofs).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import struct
from dataclasses import dataclass
from typing import Callable

from minikafka.protocol import schema
from minikafka.protocol.schema import SchemaError

PENDING_S = 1.0     # how long a probe waits to call a silent, open connection "pending"
ANSWER_S = 10.0     # how long an answer or a close may take
SOCKET_REQUEST_MAX_BYTES = 104857600   # both brokers' default
SASL_MAX_RECEIVE_SIZE = 524288         # both brokers' default

# the users of the SASL listener (both brokers: PLAIN from the JAAS config, SCRAM-SHA-256 added by the test)
USERS = {"alice": "alice-secret"}


@dataclass
class Probe:
    name: str
    listener: str       # PLAINTEXT or SASL_PLAINTEXT
    doc: str
    run: Callable


PROBES: dict[str, Probe] = {}


def probe(name: str, listener: str = "PLAINTEXT"):
    def register(fn):
        PROBES[name] = Probe(name, listener, (fn.__doc__ or "").strip(), fn)
        return fn
    return register


class Prober:
    """One connection; ``observe()`` records what came back."""

    def __init__(self, host: str, port: int):
        self.sock = socket.create_connection((host, port), timeout=ANSWER_S)
        self.seen: list = []
        self.corr = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError:
            pass  # closed by the broker already: observe() says so

    def request(self, api_key: int, version: int, body: dict, corr: int | None = None) -> int:
        self.corr = corr if corr is not None else self.corr + 1
        self.send(schema.encode_request(api_key, version, self.corr, "probe", body))
        return self.corr

    def _recv(self, n: int, timeout: float) -> bytes | None:
        buf = b""
        self.sock.settimeout(timeout)
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except socket.timeout:
                if buf:
                    raise AssertionError("a partial answer frame") from None
                raise
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def observe(self, api_key: int | None = None, version: int = 0, fields: tuple[str, ...] = ("error_code",),
                wait: float = ANSWER_S):
        """The next answer (``{"corr", fields...}`` decoded as (api_key, version)), "closed" or "pending"."""
        try:
            head = self._recv(4, wait)
            frame = None if head is None else self._recv(struct.unpack(">i", head)[0], ANSWER_S)
        except socket.timeout:
            self.seen.append("pending")
            return "pending"
        if frame is None:
            self.seen.append("closed")
            return "closed"
        out: dict = {"corr": struct.unpack_from(">i", frame, 0)[0]}
        if api_key is not None:
            body = schema.decode_response(api_key, version, frame)[1]
            for f in fields:
                value = body
                for part in f.split("."):
                    value = value[int(part)] if part.isdigit() else value[part]
                out[f] = value.decode(errors="replace") if isinstance(value, bytes) else value
        self.seen.append(out)
        return out


# ----------------------------------------------------------------------------- frame building
def header(api_key: int, version: int, corr: int = 1, client_id: bytes = b"probe", tagged: bytes | None = None) -> bytes:
    """A request header: v1 (int16 client id) and, for a flexible version, v2's tagged fields."""
    h = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id
    if tagged is not None:
        h += tagged
    elif _flexible(api_key, version):
        h += b"\x00"
    return h


def _flexible(api_key: int, version: int) -> bool:
    try:
        return schema.is_flexible(api_key, version)
    except (KeyError, ValueError, SchemaError):
        return False  # an api key or version no schema has: header v1


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def uvarint(n: int) -> bytes:
    return schema.encode_uvarint(n)


API_VERSIONS_V3 = {"client_software_name": "probe", "client_software_version": "1"}
METADATA_V12 = {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}


def api_versions_frame(corr: int = 1) -> bytes:
    return schema.encode_request(18, 3, corr, "probe", API_VERSIONS_V3)


# ----------------------------------------------------------------------------- raw frames
@probe("raw/size_int_max")
def _(p: Prober):
    """A frame announcing 2^31-1 bytes: past socket.request.max.bytes, the connection is closed."""
    p.send(struct.pack(">i", 2**31 - 1) + b"\0" * 64)
    p.observe()


@probe("raw/size_negative")
def _(p: Prober):
    p.send(struct.pack(">i", -1) + b"\0" * 64)
    p.observe()


@probe("raw/size_int_min")
def _(p: Prober):
    p.send(struct.pack(">i", -2**31) + b"\0" * 64)
    p.observe()


@probe("raw/size_zero")
def _(p: Prober):
    """An empty frame: no header to read."""
    p.send(struct.pack(">i", 0))
    p.observe()


@probe("raw/size_just_above_max")
def _(p: Prober):
    p.send(struct.pack(">i", SOCKET_REQUEST_MAX_BYTES + 1) + header(18, 3))
    p.observe()


@probe("raw/size_at_max_then_silence")
def _(p: Prober):
    """socket.request.max.bytes announced exactly, 70 KB sent: the broker waits for the rest."""
    p.send(struct.pack(">i", SOCKET_REQUEST_MAX_BYTES) + header(0, 9) + b"\0" * 70_000)
    p.observe(wait=PENDING_S)


@probe("raw/truncated_body")
def _(p: Prober):
    """An ApiVersions frame announcing 10 more bytes than it sends: the broker waits for them."""
    f = api_versions_frame()
    p.send(struct.pack(">i", len(f) - 4 + 10) + f[4:])
    p.observe(wait=PENDING_S)


@probe("raw/truncated_header")
def _(p: Prober):
    """Three bytes: not even an api key and version."""
    p.send(frame(b"\x00\x12\x00"))
    p.observe()


@probe("raw/header_without_body_api_versions")
def _(p: Prober):
    """ApiVersions v3 with its header only (no body at all)."""
    p.send(frame(header(18, 3)))
    p.observe(18, 0)


@probe("raw/header_without_body_metadata")
def _(p: Prober):
    p.send(frame(header(3, 12)))
    p.observe(3, 12, ())


@probe("raw/unknown_api_key")
def _(p: Prober):
    p.send(frame(header(999, 0)))
    p.observe()


@probe("raw/api_versions_from_the_future")
def _(p: Prober):
    """ApiVersions v127: answered in v0 with UNSUPPORTED_VERSION (KIP-511)."""
    p.send(frame(struct.pack(">hhih", 18, 127, 5, 5) + b"probe" + b"\x00" * 8))
    p.observe(18, 0)


@probe("raw/metadata_version_from_the_future")
def _(p: Prober):
    p.send(frame(header(3, 127) + b"\x00" * 8))
    p.observe()


@probe("raw/array_count_int_max")
def _(p: Prober):
    """Metadata v4: a topics array of 2^31-1 entries, followed by nothing."""
    p.send(frame(header(3, 4) + struct.pack(">i", 2**31 - 1)))
    p.observe(3, 4, ())


@probe("raw/array_count_negative")
def _(p: Prober):
    """Metadata v4: a topics array of -2 entries: Kafka's reader takes any negative count of a
    nullable array as null (all topics) and answers."""
    p.send(frame(header(3, 4) + struct.pack(">i", -2) + b"\x00"))
    p.observe(3, 4, ())


@probe("raw/compact_array_count_2_32")
def _(p: Prober):
    """Metadata v12: a compact topics array whose length is 2^32 (varint 2^32 + 1 is past an int)."""
    p.send(frame(header(3, 12) + uvarint(2**32) + b"\x00\x00\x00"))
    p.observe(3, 12, ())


@probe("raw/compact_array_count_int_max")
def _(p: Prober):
    """Metadata v12: a compact topics array of 2^31-2 entries, nothing after."""
    p.send(frame(header(3, 12) + uvarint(2**31 - 1)))
    p.observe(3, 12, ())


@probe("raw/header_tagged_field_count_2_31")
def _(p: Prober):
    """ApiVersions v3 whose header announces 2^31 tagged fields (a Java int: negative, so none)."""
    p.send(frame(header(18, 3, tagged=uvarint(2**31)) + b"\x06probe\x021\x00"))
    p.observe(18, 3)


@probe("raw/body_tagged_field_count_2_31")
def _(p: Prober):
    """Metadata v12 whose body announces 2^31 tagged fields."""
    p.send(frame(header(3, 12) + b"\x01\x00\x00" + uvarint(2**31)))
    p.observe(3, 12, ())


@probe("raw/tagged_field_size_2_31")
def _(p: Prober):
    """Metadata v12, one tagged field (tag 0) announcing 2^31-1 bytes."""
    p.send(frame(header(3, 12) + b"\x01\x00\x00" + b"\x01\x00" + uvarint(2**31 - 1) + b"\x00"))
    p.observe(3, 12, ())


@probe("raw/overlong_varint")
def _(p: Prober):
    """Metadata v12: the topics length as a 6-byte varint (at most 5 encode an int)."""
    p.send(frame(header(3, 12) + b"\x81\x80\x80\x80\x80\x00" + b"\x00\x00\x00"))
    p.observe(3, 12, ())


@probe("raw/compact_string_longer_than_a_short")
def _(p: Prober):
    """Metadata v12 asking for a topic whose compact name is 40,000 bytes (past 0x7fff)."""
    name = b"t" * 40_000
    p.send(frame(header(3, 12) + b"\x02" + b"\x00" * 16 + uvarint(len(name) + 1) + name + b"\x00" + b"\x00\x00\x00"))
    p.observe(3, 12, ())


@probe("raw/api_versions_long_software_name")
def _(p: Prober):
    """ApiVersions v3 whose client software name is 40,000 bytes."""
    p.send(frame(header(18, 3) + uvarint(40_001) + b"n" * 40_000 + b"\x021\x00"))
    p.observe(18, 0)


@probe("raw/string_length_past_the_frame")
def _(p: Prober):
    """A client id announcing 32767 bytes in a frame of a few."""
    p.send(frame(struct.pack(">hhih", 18, 2, 1, 32767) + b"abc"))
    p.observe()


@probe("raw/client_id_length_negative")
def _(p: Prober):
    """A client id of length -5 (only -1 means null)."""
    p.send(frame(struct.pack(">hhih", 3, 4, 1, -5) + struct.pack(">i", 0) + b"\x00"))
    p.observe(3, 4, ())


@probe("raw/topic_name_length_past_the_frame")
def _(p: Prober):
    """Metadata v4: one topic whose name announces 30000 bytes."""
    p.send(frame(header(3, 4) + struct.pack(">ih", 1, 30000) + b"t" * 10 + b"\x00"))
    p.observe(3, 4, ())


@probe("raw/trailing_bytes_in_a_frame")
def _(p: Prober):
    """ApiVersions v3 with 100 extra bytes inside its frame."""
    f = api_versions_frame()
    p.send(frame(f[4:] + b"\xee" * 100))
    p.observe(18, 3)


@probe("raw/garbage_after_a_frame")
def _(p: Prober):
    """A valid ApiVersions, then garbage in the same write: the first is answered, the garbage closes."""
    p.send(api_versions_frame(7) + b"\xde\xad\xbe\xef" + b"\x13" * 60)
    p.observe(18, 3)
    p.observe()


@probe("raw/many_frames_then_garbage")
def _(p: Prober):
    """Three pipelined ApiVersions then a negative size: three answers in order, then the close."""
    p.send(b"".join(api_versions_frame(c) for c in (1, 2, 3)) + struct.pack(">i", -7))
    for _ in range(3):
        p.observe(18, 3)
    p.observe()


# ----------------------------------------------------------------------------- SASL misuse
SASL = "SASL_PLAINTEXT"


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


@probe("sasl/metadata_before_handshake", SASL)
def _(p: Prober):
    p.request(3, 12, METADATA_V12)
    p.observe(3, 12, ())


@probe("sasl/authenticate_before_handshake", SASL)
def _(p: Prober):
    p.request(36, 2, {"auth_bytes": plain_token("alice", USERS["alice"])})
    p.observe(36, 2)


@probe("sasl/api_versions_then_metadata", SASL)
def _(p: Prober):
    """ApiVersions is answered before authentication; Metadata is not."""
    p.request(18, 3, API_VERSIONS_V3)
    p.observe(18, 3)
    p.request(3, 12, METADATA_V12)
    p.observe(3, 12, ())


@probe("sasl/handshake_twice", SASL)
def _(p: Prober):
    """A second SaslHandshake where SaslAuthenticate is expected."""
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1, ("error_code", "mechanisms"))
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1, ("error_code",))
    p.observe()


@probe("sasl/handshake_after_authentication", SASL)
def _(p: Prober):
    """Authenticated, a second handshake and a second authentication: ILLEGAL_SASL_STATE, still served."""
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": plain_token("alice", USERS["alice"])})
    p.observe(36, 2, ("error_code", "error_message"))
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": plain_token("alice", USERS["alice"])})
    p.observe(36, 2, ("error_code",))
    p.request(3, 12, METADATA_V12)
    p.observe(3, 12, ("topics",))


@probe("sasl/unknown_mechanism", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "X-NOTHING"})
    p.observe(17, 1, ("error_code",))
    p.observe()


@probe("sasl/bad_password", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": plain_token("alice", "wrong")})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/empty_token", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": b""})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/plain_token_without_separators", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": b"alice" * 10})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/huge_user_name", SASL)
def _(p: Prober):
    """A PLAIN user name of 400 KB (the frame is under sasl.server.max.receive.size)."""
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": plain_token("u" * 400_000, "x")})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/token_above_max_receive_size", SASL)
def _(p: Prober):
    """A SaslAuthenticate frame past sasl.server.max.receive.size: closed without an answer."""
    p.request(17, 1, {"mechanism": "PLAIN"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": plain_token("u" * (SASL_MAX_RECEIVE_SIZE + 10), "x")})
    p.observe(36, 2)


@probe("sasl/first_frame_above_max_receive_size", SASL)
def _(p: Prober):
    p.send(struct.pack(">i", SASL_MAX_RECEIVE_SIZE + 1) + header(18, 3) + b"\0" * 100)
    p.observe()


@probe("sasl/first_frame_announcing_int_max", SASL)
def _(p: Prober):
    p.send(struct.pack(">i", 2**31 - 1) + header(18, 3))
    p.observe()


@probe("sasl/v0_token_above_max_receive_size", SASL)
def _(p: Prober):
    """Handshake v0, then an unframed token announcing more than sasl.server.max.receive.size."""
    p.request(17, 0, {"mechanism": "PLAIN"})
    p.observe(17, 0)
    p.send(struct.pack(">i", SASL_MAX_RECEIVE_SIZE + 1) + b"\0alice\0")
    p.observe()


def scram_first(p: Prober, user: str = "alice", nonce: str = "clientnonce") -> str:
    p.request(17, 1, {"mechanism": "SCRAM-SHA-256"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": f"n,,n={user},r={nonce}".encode()})
    answer = p.observe(36, 2, ("error_code", "auth_bytes"))
    server_first = answer["auth_bytes"] if isinstance(answer, dict) else ""
    # the server's nonce and salt are random: the observation keeps their shape only
    if isinstance(answer, dict) and server_first:
        attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
        answer["auth_bytes"] = (f"r={'ok' if attrs['r'].startswith(nonce) else attrs['r']},"
                                f"s=<salt>,i={attrs['i']}")
    return server_first


def scram_final(password: str, first_bare: str, server_first: str, nonce_suffix: str = "",
                proof_xor: int = 0) -> bytes:
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    final_bare = f"c=biws,r={attrs['r']}{nonce_suffix}"
    auth = f"{first_bare},{server_first},{final_bare}".encode()
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth, hashlib.sha256).digest()
    proof = bytes((a ^ b) ^ proof_xor for a, b in zip(client_key, signature))
    return f"{final_bare},p={base64.b64encode(proof).decode()}".encode()


@probe("sasl/scram_good", SASL)
def _(p: Prober):
    """The control: a correct SCRAM-SHA-256 exchange, then Metadata is served."""
    server_first = scram_first(p)
    p.request(36, 2, {"auth_bytes": scram_final(USERS["alice"], "n=alice,r=clientnonce", server_first)})
    p.observe(36, 2, ("error_code",))
    p.request(3, 12, METADATA_V12)
    p.observe(3, 12, ("topics",))


@probe("sasl/scram_bad_nonce", SASL)
def _(p: Prober):
    server_first = scram_first(p)
    p.request(36, 2, {"auth_bytes": scram_final(USERS["alice"], "n=alice,r=clientnonce", server_first, "x")})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/scram_bad_proof", SASL)
def _(p: Prober):
    server_first = scram_first(p)
    p.request(36, 2, {"auth_bytes": scram_final(USERS["alice"], "n=alice,r=clientnonce", server_first,
                                                proof_xor=1)})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/scram_wrong_password", SASL)
def _(p: Prober):
    server_first = scram_first(p)
    p.request(36, 2, {"auth_bytes": scram_final("wrong", "n=alice,r=clientnonce", server_first)})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/scram_unknown_user", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "SCRAM-SHA-256"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": b"n,,n=ghost,r=clientnonce"})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/scram_long_user_name", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "SCRAM-SHA-256"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": b"n,,n=" + b"u" * 5_000 + b",r=clientnonce"})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/scram_huge_user_name", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "SCRAM-SHA-256"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": b"n,,n=" + b"u" * 400_000 + b",r=clientnonce"})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


@probe("sasl/scram_garbage_first_message", SASL)
def _(p: Prober):
    p.request(17, 1, {"mechanism": "SCRAM-SHA-256"})
    p.observe(17, 1)
    p.request(36, 2, {"auth_bytes": b"\xff\xfenot scram"})
    p.observe(36, 2, ("error_code", "error_message"))
    p.observe()


def run(probe_: Probe, host: str, port: int) -> list:
    """The probe's observations against the broker listening at host:port."""
    p = Prober(host, port)
    try:
        probe_.run(p)
    finally:
        p.close()
    return p.seen
