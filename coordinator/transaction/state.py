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
S = TxnState
# The transitions this (TV1) coordinator makes; Kafka's validPreviousStates restricted to them.
VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
}

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's TransactionMetadata.isEpochExhausted: Short.MAX_VALUE is kept for fencing."""
    return epoch >= MAX_EPOCH - 1


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    prev_producer_id: int = NO_PRODUCER_ID
    txn_timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    partitions: set = field(default_factory=set)  # {(topic, partition)}
    txn_start_ms: int = -1
    txn_last_update_ms: int = -1
    client_txn_version: int = 0
    # A transition in flight (the commit point's fsync, or Complete* while markers are being
    # written); every other request for this id gets CONCURRENT_TRANSACTIONS, as in Kafka.
    pending_state: TxnState | None = None

    def sorted_partitions(self) -> list[tuple[str, int]]:
        return sorted(self.partitions)


# -------------------------------------------------- __transaction_state records

def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + schema.build(schema.data_message("TransactionLogKey", 0),
                                               {"transactional_id": transactional_id})


_VALUE_V1_HEAD = struct.Struct(">hqhib")
_VALUE_V1_TAIL = struct.Struct(">qq")
_TOPIC_PARTITION = struct.Struct(">i")


def encode_value(md: TransactionMetadata) -> bytes:
    """The record Kafka 4.1 writes (version 1, flexible). TV1 records carry no previous or
    next producer id and client transaction version 0 (tagged fields left at their
    defaults, so not written): those exist for TV2.

    Written by hand rather than through the schema machinery, as it is appended on every
    transition; tests/unit check it byte for byte against the schema's encoding."""
    out = bytearray(_VALUE_V1_HEAD.pack(1, md.producer_id, md.producer_epoch, md.txn_timeout_ms, int(md.state)))
    by_topic: dict[str, list[int]] = {}
    for topic, part in md.sorted_partitions():
        by_topic.setdefault(topic, []).append(part)
    _uvarint(out, len(by_topic) + 1)  # compact array
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
        prev_producer_id=v.previous_producer_id,
        txn_timeout_ms=v.transaction_timeout_ms, state=TxnState(v.transaction_status), partitions=parts,
        txn_start_ms=v.transaction_start_timestamp_ms, txn_last_update_ms=v.transaction_last_update_timestamp_ms,
        client_txn_version=v.client_transaction_version,
    )
