"""The console's Kafka client: blocking connections (one per broker) on protocol/ and the
operator tools' wire client, so the security properties (``--command-config``) are the
other CLIs'. Requests to several brokers are pipelined: all are sent, then all answers read.

Each API is used at the highest version both sides speak, within the range whose request
shape the console builds (``VERSIONS``); a broker without it gets ``Unsupported``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minikafka.admin.wire import WireClient, connect
from minikafka.protocol import schema
from minikafka.protocol.errors import MESSAGES, ErrorCode

METADATA, LIST_OFFSETS, FETCH, FIND_COORDINATOR = 3, 2, 1, 10
DESCRIBE_GROUPS, LIST_GROUPS, OFFSET_FETCH, API_VERSIONS = 15, 16, 9, 18
WRITE_TXN_MARKERS, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 27, 61, 65, 66
CONSUMER_GROUP_DESCRIBE = 69

# api key -> (lowest, highest) version whose request this module builds. Fetch stops at 12:
# from 13 on topics are named by id. OffsetFetch from 8 asks for many groups at once.
VERSIONS = {
    METADATA: (1, 12), LIST_OFFSETS: (2, 7), FETCH: (5, 12), FIND_COORDINATOR: (4, 4),
    DESCRIBE_GROUPS: (0, 5), LIST_GROUPS: (0, 5), OFFSET_FETCH: (8, 9),
    WRITE_TXN_MARKERS: (1, 1), DESCRIBE_PRODUCERS: (0, 0), DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 1), CONSUMER_GROUP_DESCRIBE: (0, 0),
}


class ClusterError(Exception):
    """A broker cannot be reached or answered nonsense; the message says which."""


class Unsupported(ClusterError):
    """The broker does not speak a version of this API the console can use."""


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def error_text(code: int) -> str:
    try:
        ec = ErrorCode(code)
    except ValueError:
        return f"error code {code}"
    return f"{ec.name}: {MESSAGES.get(ec, '')}".rstrip(": ")


@dataclass
class Call:
    """One request: to ``node`` (a broker id; None: any broker), filled in by ``pipeline``
    with ``response`` or ``error``."""
    node: int | None
    api_key: int
    body: dict
    version: int = -1
    response: Any = None
    error: Exception | None = None
    tag: Any = None

    def result(self):
        if self.error is not None:
            raise self.error
        return self.response


@dataclass
class _Conn:
    wire: WireClient
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)


class Cluster:
    """Connections to a cluster's brokers, found from the bootstrap addresses' Metadata."""

    def __init__(self, bootstrap: str, properties: dict[str, str] | None = None, timeout: float = 10.0,
                 client_id: str = "minikafka-console"):
        self.bootstrap = [b.strip() for b in bootstrap.split(",") if b.strip()]
        if not self.bootstrap:
            raise ValueError("no bootstrap address")
        self.properties = dict(properties or {})
        self.timeout = timeout
        self.client_id = client_id
        self.nodes: dict[int, str] = {}  # broker id -> host:port, from the last Metadata
        self._conns: dict[Any, _Conn] = {}

    def close(self) -> None:
        for c in self._conns.values():
            c.wire.close()
        self._conns.clear()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- connections
    def _open(self, address: str) -> _Conn:
        try:
            wire = connect(address, self.properties, timeout=self.timeout, client_id=self.client_id)
        except (OSError, ConnectionError) as e:
            raise ClusterError(f"cannot connect to {address}: {e}") from None
        conn = _Conn(wire)
        try:
            resp = wire.request(API_VERSIONS, 3, {"client_software_name": "minikafka-console",
                                                   "client_software_version": "1"})
        except (OSError, ConnectionError, ValueError, AssertionError) as e:
            wire.close()
            raise ClusterError(f"ApiVersions to {address} failed: {e}") from None
        conn.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        return conn

    def _conn(self, node: int | None) -> _Conn:
        key = "bootstrap" if node is None else node
        conn = self._conns.get(key)
        if conn is not None:
            return conn
        if node is None:
            errors = []
            for address in self.bootstrap:
                try:
                    conn = self._open(address)
                    break
                except ClusterError as e:
                    errors.append(str(e))
            else:
                raise ClusterError("; ".join(errors))
        else:
            address = self.nodes.get(node)
            if address is None:
                raise ClusterError(f"broker {node} is not in the cluster's metadata")
            conn = self._open(address)
        self._conns[key] = conn
        return conn

    def _drop(self, node: int | None) -> None:
        conn = self._conns.pop("bootstrap" if node is None else node, None)
        if conn is not None:
            conn.wire.close()

    def version(self, conn: _Conn, api_key: int) -> int:
        lo, hi = VERSIONS[api_key]
        theirs = conn.versions.get(api_key)
        name = schema.API_NAMES.get(api_key, str(api_key))
        if theirs is None:
            raise Unsupported(f"the broker does not support {name}")
        v = min(hi, theirs[1])
        if v < max(lo, theirs[0]):
            raise Unsupported(f"no common version of {name} (broker {theirs[0]}-{theirs[1]}, console {lo}-{hi})")
        return v

    # ---------------------------------------------------------------- requests
    def pipeline(self, calls: list[Call]) -> list[Call]:
        """Send every call, then read every answer (in order per connection). A call whose
        broker fails gets ``error`` (ClusterError); the others are unaffected."""
        sent: list[tuple[Call, _Conn, int]] = []
        for call in calls:
            try:
                conn = self._conn(call.node)
                call.version = self.version(conn, call.api_key)
                corr = conn.wire.send(call.api_key, call.version, call.body)
            except ClusterError as e:
                call.error = e
                continue
            except (OSError, ConnectionError) as e:
                self._drop(call.node)
                call.error = ClusterError(f"broker {self._where(call.node)}: {e}")
                continue
            sent.append((call, conn, corr))
        broken: set[int] = set()
        for call, conn, corr in sent:
            if id(conn) in broken:
                call.error = ClusterError(f"broker {self._where(call.node)}: connection lost")
                continue
            try:
                call.response = conn.wire.receive(call.api_key, call.version, corr)
            except (OSError, ConnectionError, ValueError, AssertionError, schema.SchemaError) as e:
                broken.add(id(conn))
                self._drop(call.node)
                call.error = ClusterError(f"broker {self._where(call.node)}: {e or type(e).__name__}")
        return calls

    def request(self, node: int | None, api_key: int, body: dict):
        return self.pipeline([Call(node, api_key, body)])[0].result()

    def _where(self, node: int | None) -> str:
        return self.nodes.get(node, "bootstrap") if node is not None else ",".join(self.bootstrap)

    # ---------------------------------------------------------------- calls
    def metadata(self):
        """Metadata for every topic (internal ones included); records the brokers."""
        m = self.request(None, METADATA, {"topics": None, "allow_auto_topic_creation": False,
                                          "include_cluster_authorized_operations": False,
                                          "include_topic_authorized_operations": False})
        nodes = {b.node_id: f"{b.host}:{b.port}" for b in m.brokers}
        for node, address in list(self.nodes.items()):
            if nodes.get(node) != address:
                self._drop(node)
        self.nodes = nodes
        return m


def list_offsets_body(partitions: list[tuple[str, int]], timestamp: int, isolation: int) -> dict:
    topics: dict[str, list[dict]] = {}
    for t, p in partitions:
        topics.setdefault(t, []).append({"partition_index": p, "timestamp": timestamp, "current_leader_epoch": -1})
    return {"replica_id": -1, "isolation_level": isolation,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


def fetch_body(positions: list[tuple[str, int, int]], isolation: int, partition_max_bytes: int,
               max_bytes: int) -> dict:
    """A Fetch that never waits (max_wait_ms 0), sessionless, from ``(topic, partition, offset)``."""
    topics: dict[str, list[dict]] = {}
    for t, p, offset in positions:
        topics.setdefault(t, []).append({"partition": p, "fetch_offset": offset, "current_leader_epoch": -1,
                                         "log_start_offset": -1, "partition_max_bytes": partition_max_bytes})
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [], "rack_id": ""}


def by_topic(partitions) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, p in partitions:
        out.setdefault(t, []).append(p)
    return out
