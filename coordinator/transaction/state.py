"""Transaction states and per-transactional-id metadata (Kafka's TransactionState /
TransactionMetadata), and their `__transaction_state` record encoding."""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from minikafka.protocol import schema


class TxnState(enum.IntEnum):
    # ids are Kafka's TransactionState.id(), stored in TransactionLogValue.TransactionStatus.
    # DEAD and PREPARE_EPOCH_FENCE are never entered here (an expired id gets a tombstone; a
    # fence goes straight to PREPARE_ABORT with the bumped epoch) but they are Kafka's state
    # names, which ListTransactions accepts as filters.
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display(self) -> str:
        """The name Kafka's tools print (kafka-transactions.sh)."""
        return _DISPLAY[self]


_DISPLAY = {s: "".join(w.capitalize() for w in s.name.split("_")) for s in TxnState}
# The transitions this coordinator makes; Kafka's validPreviousStates restricted to them. Under
# transactions V2 a client may abort with no transaction open (Empty/Complete* -> PrepareAbort).
VALID_PREVIOUS = {
    TxnState.EMPTY: {TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT},
    TxnState.ONGOING: {TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT},
    TxnState.PREPARE_COMMIT: {TxnState.ONGOING},
    TxnState.PREPARE_ABORT: {TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT},
    TxnState.COMPLETE_COMMIT: {TxnState.PREPARE_COMMIT},
    TxnState.COMPLETE_ABORT: {TxnState.PREPARE_ABORT},
}

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767
# Kafka's TransactionVersion levels: what a transition was made under (client_txn_version)
TV_0, TV_1, TV_2 = 0, 1, 2


def supports_epoch_bump(transaction_version: int) -> bool:
    """Kafka's TransactionVersion.supportsEpochBump: transactions V2 (KIP-890 part 2)."""
    return transaction_version >= TV_2


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's TransactionMetadata.isEpochExhausted: Short.MAX_VALUE is kept for fencing."""
    return epoch >= MAX_EPOCH - 1


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    # the producer id before the last transition (differs from producer_id right after a
    # rotation: a retry of the request that rotated is recognised by it) and, under
    # transactions V2, the producer id a commit or abort at an exhausted epoch moves to
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    txn_timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: set = field(default_factory=set)  # {(topic, partition)}
    txn_start_ms: int = -1
    txn_last_update_ms: int = -1
    # Kafka's clientTransactionVersion: the protocol of the request behind the last transition
    # (AddPartitionsToTxn v4+ and EndTxn v5: 2; older versions: 0; server-initiated aborts:
    # the finalized transaction.version)
    client_txn_version: int = TV_0
    # A transition in flight (the commit point's fsync when the flush settings ask for one, or
    # Complete* while markers are being written); every other request for this id gets
    # CONCURRENT_TRANSACTIONS, as in Kafka.
    pending_state: TxnState | None = None

    def sorted_partitions(self) -> list[tuple[str, int]]:
        return sorted(self.partitions)


# -------------------------------------------------- __transaction_state records

def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + schema.build(schema.data_message("TransactionLogKey", 0),
                                               {"transactional_id": transactional_id})


def value_version(transaction_version: int) -> int:
    """Kafka's TransactionVersion.transactionLogValueVersion: the finalized transaction.version
    at write time decides (0: the classic value; 1 and 2: version 1, flexible)."""
    return 0 if transaction_version < TV_1 else 1


def encode_value_by_schema(md: TransactionMetadata, version: int = 1) -> bytes:
    """The record Kafka 4.1 writes, built by the schema machinery (in ``version``,
    ``value_version`` of the finalized transaction.version). Version 1 carries ``client_transaction_version`` (tagged, written when
    not 0) and the producer ids of an epoch exhaustion (tagged, written when set): the next
    producer id while a transactions V2 commit or abort moves to it, and the previous one while
    it differs from the current (right after a rotation). Kafka 4.1 writes neither producer id,
    so it forgets them across a coordinator reload (tests/conformance/DIFFERENCES.md,
    rotation-survives-reload)."""
    by_topic: dict[str, list[int]] = {}
    for topic, part in md.sorted_partitions():
        by_topic.setdefault(topic, []).append(part)
    previous = md.prev_producer_id if md.prev_producer_id != md.producer_id else NO_PRODUCER_ID
    body = {
        "producer_id": md.producer_id, "producer_epoch": md.producer_epoch,
        "previous_producer_id": previous, "next_producer_id": md.next_producer_id,
        "transaction_timeout_ms": md.txn_timeout_ms, "transaction_status": int(md.state),
        # Kafka writes null for Empty (no partitions at all) and a list otherwise
        "transaction_partitions": None if md.state == TxnState.EMPTY else
        [{"topic": t, "partition_ids": p} for t, p in by_topic.items()],
        "transaction_last_update_timestamp_ms": md.txn_last_update_ms,
        "transaction_start_timestamp_ms": md.txn_start_ms,
        "client_transaction_version": md.client_txn_version,
    }
    return struct.pack(">h", version) + schema.build(schema.data_message("TransactionLogValue", version), body)


_VALUE_V1_HEAD = struct.Struct(">hqhib")
_VALUE_V1_TAIL = struct.Struct(">qq")
_TOPIC_PARTITION = struct.Struct(">i")


def encode_value(md: TransactionMetadata, version: int = 1) -> bytes:
    """The record Kafka 4.1 writes (``encode_value_by_schema``). Written by hand for the
    usual case (version 1, no producer ids of a rotation to carry), as it is appended on
    every transition; tests/unit check it byte for byte against the schema's encoding."""
    if version != 1 or md.next_producer_id != NO_PRODUCER_ID or (
            md.prev_producer_id != NO_PRODUCER_ID and md.prev_producer_id != md.producer_id):
        return encode_value_by_schema(md, version)
    out = bytearray(_VALUE_V1_HEAD.pack(1, md.producer_id, md.producer_epoch, md.txn_timeout_ms, int(md.state)))
    by_topic: dict[str, list[int]] = {}
    if md.state != TxnState.EMPTY:
        for topic, part in md.sorted_partitions():
            by_topic.setdefault(topic, []).append(part)
    # Kafka writes null for Empty (no partitions at all) and a list otherwise
    _uvarint(out, 0 if md.state == TxnState.EMPTY else len(by_topic) + 1)  # compact array
    for topic, parts in by_topic.items():
        name = topic.encode("utf-8")
        _uvarint(out, len(name) + 1)  # compact string
        out += name
        _uvarint(out, len(parts) + 1)
        for p in parts:
            out += _TOPIC_PARTITION.pack(p)
        out.append(0)  # no tagged fields
    out += _VALUE_V1_TAIL.pack(md.txn_last_update_ms, md.txn_start_ms)
    if md.client_txn_version:
        out += bytes((1, 2, 2)) + md.client_txn_version.to_bytes(2, "big", signed=True)  # tag 2, 2 bytes
    else:
        out.append(0)
    return bytes(out)


def _uvarint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def decode_key(data: bytes) -> str | None:
    (version,) = struct.unpack_from(">h", data, 0)
    if version != 0:
        return None  # another record type; not ours
    body, _ = schema.parse(schema.data_message("TransactionLogKey", 0), data[2:])
    return body.transactional_id


def decode_value(transactional_id: str, data: bytes | None) -> TransactionMetadata | None:
    if data is None:
        return None  # tombstone
    (version,) = struct.unpack_from(">h", data, 0)
    v, _ = schema.parse(schema.data_message("TransactionLogValue", min(version, 1)), data[2:])
    parts = set()
    for tp in v.transaction_partitions or []:
        for p in tp.partition_ids:
            parts.add((tp.topic, p))
    return TransactionMetadata(
        transactional_id=transactional_id, producer_id=v.producer_id, producer_epoch=v.producer_epoch,
        prev_producer_id=v.previous_producer_id, next_producer_id=v.next_producer_id,
        txn_timeout_ms=v.transaction_timeout_ms, state=TxnState(v.transaction_status), partitions=parts,
        txn_start_ms=v.transaction_start_timestamp_ms, txn_last_update_ms=v.transaction_last_update_timestamp_ms,
        client_txn_version=v.client_transaction_version,
    )
