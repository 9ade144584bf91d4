"""`minikafka transactions`: Kafka's ``kafka-transactions.sh`` (KIP-664) over the wire protocol.

    minikafka transactions --bootstrap-server HOST:PORT list
    minikafka transactions --bootstrap-server HOST:PORT describe --transactional-id ID
    minikafka transactions --bootstrap-server HOST:PORT describe-producers --topic T --partition P [--broker-id N]
    minikafka transactions --bootstrap-server HOST:PORT find-hanging [--broker-id N] [--topic T [--partition P]]
                                                                     [--max-transaction-timeout MINUTES]
    minikafka transactions --bootstrap-server HOST:PORT abort --topic T --partition P --start-offset OFFSET
                                                              (or --producer-id --producer-epoch --coordinator-epoch)

Columns, table layout (left-aligned, tab after every column) and the
find-hanging algorithm are those of Kafka's ``TransactionsCommand``:

* find-hanging: DescribeProducers on the partitions (of one broker or topic);
  producers with an open transaction whose last write is older than the max
  transaction timeout are candidates; ListTransactions (producer id filter)
  maps them to transactional ids and DescribeTransactions asks the coordinator
  whether the partition is still part of that transaction. It is hanging when
  no transactional id is found, or the coordinator does not list the partition.
* abort --start-offset: DescribeProducers finds the producer whose open
  transaction starts at that offset; its id, epoch and latest coordinator epoch
  (0 when the partition has seen none, as Kafka's ``coordinatorEpoch().orElse(0)``)
  go into a WriteTxnMarkers(ABORT). The partition fences a marker whose coordinator
  epoch is below the last one it saw, so the tool sends that one, never -1.

Differences from Kafka's tool: find-hanging without --broker-id/--topic
searches every partition of the cluster (internal topics included: a hanging
transaction on ``__consumer_offsets`` is the classic case), and
--max-transaction-timeout accepts fractions of a minute.
"""
from __future__ import annotations

import argparse
import sys
import time

from minikafka.protocol import schema
from minikafka.protocol.errors import MESSAGES, ErrorCode

from .wire import WireClient

API_METADATA, API_FIND_COORDINATOR, API_VERSIONS = 3, 10, 18
API_WRITE_TXN_MARKERS, API_DESCRIBE_PRODUCERS, API_DESCRIBE_TRANSACTIONS, API_LIST_TRANSACTIONS = 27, 61, 65, 66
TXN_COORDINATOR = 1


class CommandError(Exception):
    """Printed to stderr; exit code 1 (Kafka's printErrorAndExit)."""


def error_text(code: int) -> str:
    try:
        ec = ErrorCode(code)
    except ValueError:
        return f"error code {code}"
    return f"{MESSAGES.get(ec, ec.name)} ({ec.name})"


# ------------------------------------------------------------------ client side
class Admin:
    """The few admin calls the tool needs, on blocking wire connections (one per node)."""

    def __init__(self, bootstrap: str, timeout: float = 30.0):
        self.bootstrap = bootstrap.split(",")[0].strip()
        self.timeout = timeout
        self.conns: dict = {}
        self.nodes: dict[int, tuple[str, int]] = {}
        self.versions: dict = {}

    def close(self) -> None:
        for c in self.conns.values():
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _conn(self, node: int | None) -> WireClient:
        key = node if node is not None else "bootstrap"
        c = self.conns.get(key)
        if c is None:
            if node is None:
                c = WireClient.to(self.bootstrap, timeout=self.timeout, client_id="minikafka-transactions")
            else:
                if node not in self.nodes:
                    self.metadata([])
                if node not in self.nodes:
                    raise CommandError(f"unknown broker id {node}")
                host, port = self.nodes[node]
                c = WireClient(host, port, timeout=self.timeout, client_id="minikafka-transactions")
            self.conns[key] = c
            resp = c.request(API_VERSIONS, 3, {"client_software_name": "minikafka-transactions",
                                                "client_software_version": "1"})
            self.versions[key] = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        return c

    def request(self, api_key: int, body: dict, node: int | None = None, max_version: int | None = None):
        c = self._conn(node)
        key = node if node is not None else "bootstrap"
        ours_lo, ours_hi = schema.schema_versions(api_key)
        if max_version is not None:
            ours_hi = min(ours_hi, max_version)
        theirs = self.versions[key].get(api_key)
        if theirs is None:
            raise CommandError(f"the broker does not support {schema.API_NAMES.get(api_key, api_key)}")
        version = min(ours_hi, theirs[1])
        if version < max(ours_lo, theirs[0]):
            raise CommandError(f"no common version of {schema.API_NAMES.get(api_key, api_key)}")
        return c.request(api_key, version, body)

    # -------------------------------------------------------------- calls
    def metadata(self, topics: list[str] | None):
        """Metadata for `topics` (None: all topics). Records the brokers."""
        if topics is None:
            # "all topics": an empty list in v0 (a null array from v1 on; v0 is simplest to encode)
            resp = self.request(API_METADATA, {"topics": []}, max_version=0)
        else:
            body = {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False}
            resp = self.request(API_METADATA, body, max_version=12)
        for b in resp.brokers:
            self.nodes[b.node_id] = (b.host, b.port)
        return resp

    def topic_partitions(self, topics: list[str] | None, broker_id: int | None = None) -> dict[tuple[str, int], int]:
        """{(topic, partition): leader} for the topics (None: all), limited to partitions with a
        replica on `broker_id` if given."""
        resp = self.metadata(topics)
        out = {}
        for t in resp.topics:
            if t.error_code:
                raise CommandError(f"Failed to describe topic {t.name}: {error_text(t.error_code)}")
            for p in t.partitions:
                if broker_id is None or broker_id in p.replica_nodes:
                    out[(t.name, p.partition_index)] = p.leader_id
        return out

    def describe_producers(self, partitions: list[tuple[str, int]], broker_id: int | None = None) -> dict:
        """{(topic, partition): [active producer]}; by default asks each partition's leader."""
        by_node: dict[int | None, list[tuple[str, int]]] = {}
        if broker_id is not None:
            by_node[broker_id] = list(partitions)
        else:
            leaders = self.topic_partitions(sorted({t for t, _ in partitions}))
            for tp in partitions:
                if tp not in leaders:
                    raise CommandError(f"{tp[0]}-{tp[1]}: {error_text(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}")
                by_node.setdefault(leaders[tp], []).append(tp)
        out = {}
        for node, tps in by_node.items():
            topics: dict[str, list[int]] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(p)
            resp = self.request(API_DESCRIBE_PRODUCERS,
                                {"topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]},
                                node=node)
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code:
                        raise CommandError(f"{t.name}-{p.partition_index}: {p.error_message or error_text(p.error_code)}")
                    out[(t.name, p.partition_index)] = list(p.active_producers)
        return out

    def list_transactions(self, producer_ids: list[int] | None = None, states: list[str] | None = None,
                          broker_ids: list[int] | None = None) -> dict[int, list]:
        if broker_ids is None:
            self.metadata([])
            broker_ids = sorted(self.nodes)
        out = {}
        for node in broker_ids:
            resp = self.request(API_LIST_TRANSACTIONS, {"state_filters": states or [],
                                                        "producer_id_filters": producer_ids or [],
                                                        "duration_filter": -1}, node=node)
            if resp.error_code:
                raise CommandError(f"Failed to list transactions: {error_text(resp.error_code)}")
            out[node] = list(resp.transaction_states)
        return out

    def find_coordinator(self, transactional_id: str) -> int:
        resp = self.request(API_FIND_COORDINATOR, {"key_type": TXN_COORDINATOR, "key": transactional_id,
                                                   "coordinator_keys": [transactional_id]})
        if resp.get("coordinators"):
            c = resp.coordinators[0]
            code, node, host, port = c.error_code, c.node_id, c.host, c.port
        else:
            code, node, host, port = resp.error_code, resp.node_id, resp.host, resp.port
        if code:
            raise CommandError(f"FindCoordinator for `{transactional_id}` failed: {error_text(code)}")
        self.nodes[node] = (host, port)
        return node

    def describe_transactions(self, transactional_ids: list[str]) -> dict[str, tuple[int, object]]:
        """{transactional id: (coordinator id, TransactionState)} (error_code per entry)."""
        by_node: dict[int, list[str]] = {}
        for tid in transactional_ids:
            by_node.setdefault(self.find_coordinator(tid), []).append(tid)
        out = {}
        for node, tids in by_node.items():
            resp = self.request(API_DESCRIBE_TRANSACTIONS, {"transactional_ids": tids}, node=node)
            for s in resp.transaction_states:
                out[s.transactional_id] = (node, s)
        return out

    def abort(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
              coordinator_epoch: int) -> int:
        leader = self.topic_partitions([topic]).get((topic, partition))
        if leader is None:
            raise CommandError(f"{topic}-{partition}: {error_text(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}")
        body = {"markers": [{"producer_id": producer_id, "producer_epoch": producer_epoch,
                             "transaction_result": False, "coordinator_epoch": coordinator_epoch,
                             "topics": [{"name": topic, "partition_indexes": [partition]}]}]}
        resp = self.request(API_WRITE_TXN_MARKERS, body, node=leader, max_version=1)
        for m in resp.markers:
            for t in m.topics:
                for p in t.partitions:
                    if p.error_code:
                        return p.error_code
        return 0


# ------------------------------------------------------------------ output
def pretty_print_table(headers: list[str], rows: list[list[str]], out) -> None:
    """Kafka's prettyPrintTable: each column left-aligned to its widest cell, then a tab."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    for row in [headers] + rows:
        print("".join(cell.ljust(widths[i]) + "\t" for i, cell in enumerate(row)), file=out)


def now_ms() -> int:
    return int(time.time() * 1000)


# ------------------------------------------------------------------ commands
LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADERS = ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions"]
PRODUCERS_HEADERS = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                     "CurrentTransactionStartOffset"]
HANGING_HEADERS = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)"]
# A transaction in these states may still get markers for the partitions the coordinator lists.
OPEN_STATES = {"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}


def cmd_list(admin: Admin, args, out) -> None:
    rows = []
    for node, listings in admin.list_transactions().items():
        for t in listings:
            rows.append([t.transactional_id, str(node), str(t.producer_id), t.transaction_state])
    pretty_print_table(LIST_HEADERS, rows, out)


def cmd_describe(admin: Admin, args, out) -> None:
    tid = args.transactional_id
    node, s = admin.describe_transactions([tid])[tid]
    if s.error_code:
        raise CommandError(f"Failed to describe transaction state of transactional-id `{tid}`: "
                           f"{error_text(s.error_code)}")
    if s.transaction_start_time_ms >= 0:
        start, duration = str(s.transaction_start_time_ms), str(now_ms() - s.transaction_start_time_ms)
    else:
        start = duration = "None"
    parts = ",".join(f"{t.topic}-{p}" for t in s.topics for p in t.partitions)
    pretty_print_table(DESCRIBE_HEADERS, [[str(node), tid, str(s.producer_id), str(s.producer_epoch),
                                           s.transaction_state, str(s.transaction_timeout_ms), start, duration,
                                           parts]], out)


def cmd_describe_producers(admin: Admin, args, out) -> None:
    tp = (args.topic, args.partition)
    try:
        producers = admin.describe_producers([tp], args.broker_id)[tp]
    except CommandError as e:
        where = f"broker {args.broker_id}" if args.broker_id is not None else "leader"
        raise CommandError(f"Failed to describe producers for partition {tp[0]}-{tp[1]} on {where}: {e}") from None
    rows = [[str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch if p.coordinator_epoch >= 0 else -1),
             str(p.last_sequence), str(p.last_timestamp),
             str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else "None"]
            for p in producers]
    pretty_print_table(PRODUCERS_HEADERS, rows, out)


def find_hanging(admin: Admin, broker_id: int | None, topic: str | None, partition: int | None,
                 max_timeout_ms: float) -> list[tuple[tuple[str, int], object]]:
    """Kafka's FindHangingTransactionsCommand: [((topic, partition), producer state)]."""
    if topic is not None and partition is not None:
        partitions = [(topic, partition)]
    else:
        partitions = sorted(admin.topic_partitions([topic] if topic else None, broker_id))
    candidates = []
    for i in range(0, len(partitions), 500):
        batch = partitions[i:i + 500]
        now = now_ms()
        for tp, producers in admin.describe_producers(batch, broker_id).items():
            for p in producers:
                if p.current_txn_start_offset >= 0 and now - p.last_timestamp > max_timeout_ms:
                    candidates.append((tp, p))
    if not candidates:
        return []
    by_pid: dict[int, list] = {}
    for tp, p in candidates:
        by_pid.setdefault(p.producer_id, []).append((tp, p))
    tids: dict[int, str] = {}
    for listings in admin.list_transactions(producer_ids=sorted(by_pid)).values():
        for t in listings:
            if t.producer_id in by_pid:
                tids[t.producer_id] = t.transactional_id
    descriptions = admin.describe_transactions(sorted(set(tids.values()))) if tids else {}
    hanging = []
    for pid, open_txns in by_pid.items():
        tid = tids.get(pid)
        desc = descriptions.get(tid)[1] if tid in descriptions else None
        if desc is not None and desc.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            desc = None
        elif desc is not None and desc.error_code:
            raise CommandError(f"Failed to describe transaction of `{tid}`: {error_text(desc.error_code)}")
        if desc is None:
            hanging.extend(open_txns)  # no coordinator knows this producer: nobody will end it
            continue
        # Partitions the coordinator still has to write markers to (Kafka returns none
        # for Empty/Complete* states; be explicit about it for any coordinator).
        listed = set()
        if desc.transaction_state in OPEN_STATES and desc.producer_id == pid:
            listed = {(t.topic, p) for t in desc.topics for p in t.partitions}
        hanging.extend((tp, p) for tp, p in open_txns if tp not in listed)
    return sorted(hanging, key=lambda x: (x[0], x[1].producer_id))


def cmd_find_hanging(admin: Admin, args, out) -> None:
    if args.partition is not None and args.topic is None:
        raise CommandError("The --partition argument requires --topic to be provided")
    max_timeout_ms = args.max_transaction_timeout * 60_000
    hanging = find_hanging(admin, args.broker_id, args.topic, args.partition, max_timeout_ms)
    now = now_ms()
    rows = [[tp[0], str(tp[1]), str(p.producer_id), str(p.producer_epoch),
             str(p.coordinator_epoch if p.coordinator_epoch >= 0 else -1), str(p.current_txn_start_offset),
             str(p.last_timestamp), str((now - p.last_timestamp) // 60_000)]
            for tp, p in hanging]
    pretty_print_table(HANGING_HEADERS, rows, out)


def cmd_abort(admin: Admin, args, out) -> None:
    tp = (args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise CommandError("The transaction to abort must be identified either with --start-offset "
                           "(for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
                           "--coordinator-epoch (for older brokers)")
    if args.start_offset is not None:
        try:
            producers = admin.describe_producers([tp])[tp]
        except CommandError as e:
            raise CommandError(f"Failed to validate producer state for partition {tp[0]}-{tp[1]}: {e}") from None
        found = [p for p in producers if p.current_txn_start_offset >= 0
                 and p.current_txn_start_offset == args.start_offset]
        if not found:
            raise CommandError(f"Could not find any open transactions starting at offset {args.start_offset} "
                               f"on partition {tp[0]}-{tp[1]}")
        # Kafka's buildAbortSpec: the partition's latest coordinator epoch for the producer,
        # 0 if it has none (-1): the marker must not be fenced by the coordinator epoch
        pid, epoch = found[0].producer_id, found[0].producer_epoch
        coordinator_epoch = max(found[0].coordinator_epoch, 0)
    else:
        if args.producer_epoch is None:
            raise CommandError("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise CommandError("Missing required argument --coordinator-epoch")
        pid, epoch, coordinator_epoch = args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0)
    spec = (f"AbortTransactionSpec(topicPartition={tp[0]}-{tp[1]}, producerId={pid}, producerEpoch={epoch}, "
            f"coordinatorEpoch={coordinator_epoch})")
    code = admin.abort(tp[0], tp[1], pid, epoch, coordinator_epoch)
    if code:
        raise CommandError(f"Failed to abort transaction {spec}: {error_text(code)}")


COMMANDS = {
    "list": cmd_list,
    "describe": cmd_describe,
    "describe-producers": cmd_describe_producers,
    "find-hanging": cmd_find_hanging,
    "abort": cmd_abort,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minikafka transactions",
        description="This tool is used to analyze the transactional state of producers in the cluster. "
                    "It can be used to detect and recover from hanging transactions.")
    parser.add_argument("--bootstrap-server", required=True, metavar="host:port",
                        help="hostname and port for the broker to connect to, in the form `host:port`")
    parser.add_argument("--timeout", type=float, default=30.0, help="socket timeout in seconds")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands", required=True)
    sub.add_parser("list", help="list transactions")
    p = sub.add_parser("describe", help="describe the state of an active transactional-id")
    p.add_argument("--transactional-id", required=True, help="transactional id")
    p = sub.add_parser("describe-producers", help="describe the states of active producers for a topic partition")
    p.add_argument("--broker-id", type=int, help="optional broker id to describe the producer state on a specific replica")
    p.add_argument("--topic", required=True, help="topic name")
    p.add_argument("--partition", type=int, required=True, help="partition number")
    p = sub.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    p.add_argument("--topic", required=True, help="topic name")
    p.add_argument("--partition", type=int, required=True, help="partition number")
    p.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    p.add_argument("--producer-id", type=int, help="producer id (older brokers)")
    p.add_argument("--producer-epoch", type=int, help="producer epoch (older brokers)")
    p.add_argument("--coordinator-epoch", type=int, help="coordinator epoch (older brokers)")
    p = sub.add_parser("find-hanging", help="find hanging transactions")
    p.add_argument("--broker-id", type=int, help="broker id to search for hanging transactions")
    p.add_argument("--max-transaction-timeout", type=float, default=15.0,
                   help="maximum transaction timeout in minutes to limit the scope of the search (default 15)")
    p.add_argument("--topic", help="topic name to limit search to")
    p.add_argument("--partition", type=int, help="partition number")
    return parser


def main(argv: list[str], out=None) -> int:
    args = build_parser().parse_args(argv)
    out = out or sys.stdout
    try:
        with Admin(args.bootstrap_server, timeout=args.timeout) as admin:
            COMMANDS[args.command](admin, args, out)
    except CommandError as e:
        print(str(e), file=sys.stderr)
        return 1
    except (OSError, ConnectionError) as e:
        print(f"Failed to talk to {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    out.flush()
    return 0
