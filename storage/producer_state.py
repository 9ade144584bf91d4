"""Producer state: idempotence, open transactions, LSO (Kafka's ``ProducerStateManager``).

Per producer id a :class:`ProducerStateEntry` (Kafka's class of that name):
epoch, coordinator epoch, last timestamp, first offset of the open
transaction, and the metadata of its last 5 batches (first/last sequence,
last offset, offset delta, timestamp) for duplicate detection.

An append is checked in two steps, as Kafka's ``UnifiedLog.append`` does:

1. :meth:`ProducerStateManager.analyze_append` (before the write, offsets
   already assigned): exact duplicates of a retained batch short-circuit the
   append; otherwise each batch goes through a :class:`ProducerAppendInfo`
   (Kafka's class of that name) that validates epoch, sequence and
   transaction state against the stored entry *and* the earlier batches of
   the same append. Nothing is modified; an error rejects the whole append.
2. :meth:`ProducerStateManager.apply_append` (after the write): the entries
   are updated, started transactions join :attr:`ongoing_txns`, completed
   ones leave it, and every aborted one gets an entry in the active segment's
   ``.txnindex`` (:mod:`minikafka.storage.transaction_index`).

Snapshots ``<offset 20 digits>.snapshot`` use Kafka's exact layout
(``ProducerSnapshot`` v1)::

    int16 version (1) | uint32 crc (CRC-32C of everything after this field) |
    int32 count | count x { int64 producerId, int16 epoch, int32 lastSequence,
    int64 lastOffset, int32 offsetDelta, int64 timestamp, int32 coordinatorEpoch,
    int64 currentTxnFirstOffset }

They are written on segment roll, on close and when the log start offset
moves (at the log end offset); the latest two are kept. On load the latest valid snapshot at or below the log
end offset is read and the log tail replayed (:meth:`replay_batch`, Kafka's
``AppendOrigin.REPLICATION``: nothing is refused, state is just rebuilt).
"""
from __future__ import annotations

import logging
import os
import re
import struct
from typing import NamedTuple

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import BatchHeader
from minikafka.storage.checkpoint import read_file
from minikafka.storage.transaction_index import AbortedTxn, TransactionIndex

log = logging.getLogger("minikafka.storage")

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2147483647
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

# Kafka's AppendOrigin
ORIGIN_CLIENT = 0
ORIGIN_COORDINATOR = 1
ORIGIN_REPLAY = 2   # REPLICATION in Kafka: log recovery / reload, never refuses

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAPSHOT_FILE = re.compile(r"^(\d{20})\.snapshot$")
_SNAP_HEADER = struct.Struct(">hI")        # version, crc
_SNAP_COUNT = struct.Struct(">i")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")   # 46 bytes
_CRC_START = _SNAP_HEADER.size             # 6: the CRC covers everything after the crc field

_CONTROL = rec.CONTROL_FLAG
_TRANSACTIONAL = rec.TRANSACTIONAL_FLAG


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's ``DefaultRecordBatch.decrementSequence`` (sequences wrap at int32 max)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class DuplicateBatch(NamedTuple):
    """A retried batch: the append is skipped and these offsets are returned
    (``log_append_time_ms`` is the stored batch's timestamp, as Kafka answers)."""
    first_offset: int
    last_offset: int
    log_append_time_ms: int


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int    # offset of the marker
    is_aborted: bool


class VerificationStateEntry:
    """A transactional append being verified with the transaction coordinator (Kafka's
    VerificationStateEntry, KIP-890 part 1): created when a producer's first batch of a
    transaction on this partition is checked, removed when any transactional batch (data or
    marker) of that producer is appended. While it exists, a batch with a sequence above the
    lowest one seen is refused (OUT_OF_ORDER_SEQUENCE_NUMBER), so a batch whose verification
    failed retriably cannot be overtaken by a later one. ``supports_epoch_bump``: the append
    adds its partition to the transaction itself (Produce v12+, transactions V2); such a
    producer's first batch on a partition where it has no state must have sequence 0.
    In-memory only, like Kafka's."""
    __slots__ = ("timestamp", "lowest_sequence", "epoch", "supports_epoch_bump")

    def __init__(self, timestamp: int, sequence: int, epoch: int, supports_epoch_bump: bool = False):
        self.timestamp = timestamp
        self.lowest_sequence = sequence
        self.epoch = epoch
        self.supports_epoch_bump = supports_epoch_bump

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


class ProducerStateEntry:
    """State of one producer id on one partition."""
    __slots__ = ("producer_id", "producer_epoch", "coordinator_epoch", "last_timestamp",
                 "current_txn_first_offset", "batches")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, coordinator_epoch: int = -1,
                 last_timestamp: int = -1, current_txn_first_offset: int = -1,
                 batches: list[BatchMetadata] | None = None):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset   # -1: no open transaction
        self.batches: list[BatchMetadata] = batches if batches is not None else []  # oldest first, <= 5

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_sequence(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    @property
    def has_ongoing_transaction(self) -> bool:
        return self.current_txn_first_offset >= 0

    def find_duplicate(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if producer_epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
                f"currentTxnFirstOffset={self.current_txn_first_offset}, coordinatorEpoch={self.coordinator_epoch}, "
                f"lastTimestamp={self.last_timestamp}, batchMetadata={self.batches})")


class ProducerAppendInfo:
    """Validates the batches of one producer within one append against its stored entry
    and accumulates the would-be new state (Kafka's ``ProducerAppendInfo``). Nothing is
    changed until :meth:`ProducerStateManager.apply_append`."""
    __slots__ = ("name", "producer_id", "current", "origin", "epoch", "coordinator_epoch", "last_timestamp",
                 "txn_first", "batches", "started_txn", "verification", "transactional")

    def __init__(self, name: str, producer_id: int, current: ProducerStateEntry | None, origin: int,
                 verification: VerificationStateEntry | None = None):
        self.name = name
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.verification = verification
        self.transactional = False  # a transactional batch (data or marker) is in this append
        if current is None:
            self.epoch = NO_PRODUCER_EPOCH
            self.coordinator_epoch = -1
            self.last_timestamp = -1
            self.txn_first = -1
        else:
            self.epoch = current.producer_epoch
            self.coordinator_epoch = current.coordinator_epoch
            self.last_timestamp = current.last_timestamp
            self.txn_first = current.current_txn_first_offset
        self.batches: list[BatchMetadata] = []  # new batches of this append (of the latest epoch)
        self.started_txn = -1                   # first offset of a transaction started by this append

    # -- checks (Kafka's checkProducerEpoch / checkSequence / checkCoordinatorEpoch) --
    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        if producer_epoch < self.epoch and self.origin != ORIGIN_REPLAY:
            # Kafka 2.7+: InvalidProducerEpoch (recoverable: the client aborts and retries), not ProducerFenced
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"Epoch of producer {self.producer_id} at offset {offset} in {self.name} is "
                             f"{producer_epoch}, which is smaller than the last seen epoch {self.epoch}")

    def _check_sequence(self, producer_epoch: int, first_seq: int, offset: int) -> None:
        v = self.verification
        if (v is not None and v.supports_epoch_bump and first_seq != 0
                and (self.current is None or not self.current.batches)):
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"Invalid sequence number for producer {self.producer_id} at offset {offset} in "
                             f"partition {self.name}: {first_seq} (incoming seq. number). Expected sequence 0 for "
                             f"transactions v2 idempotent producer with no existing state.")
        if v is not None and first_seq > v.lowest_sequence:
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"Out of order sequence number for producer {self.producer_id} at offset {offset} in "
                             f"partition {self.name}: {first_seq} (incoming seq. number), {v.lowest_sequence} "
                             f"(earliest seen sequence)")
        if producer_epoch != self.epoch:
            if first_seq != 0 and self.epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"Invalid sequence number for new epoch of producer {self.producer_id} at offset "
                                 f"{offset} in partition {self.name}: {producer_epoch} (request epoch), "
                                 f"{first_seq} (seq. number), {self.epoch} (current producer epoch)")
            return
        current = self.current
        if self.batches:
            current_last = self.batches[-1].last_seq
        elif current is not None and producer_epoch == current.producer_epoch:
            current_last = current.last_sequence
        else:
            current_last = NO_SEQUENCE
        # an unknown producer (no entry, or all its state gone) may start at any sequence: Kafka 2.5+
        # (KIP-360) accepts it instead of answering UNKNOWN_PRODUCER_ID
        current_epoch = current.producer_epoch if current is not None else NO_PRODUCER_EPOCH
        if current_epoch != NO_PRODUCER_EPOCH and not in_sequence(current_last, first_seq):
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"Out of order sequence number for producer {self.producer_id} at offset {offset} in "
                             f"partition {self.name}: {first_seq} (incoming seq. number), {current_last} "
                             f"(current end sequence number)")

    # -- appends --
    def append_data_batch(self, producer_epoch: int, first_seq: int, last_seq: int, timestamp: int,
                          first_offset: int, last_offset: int, transactional: bool) -> None:
        origin = self.origin
        if producer_epoch < self.epoch:
            self._check_producer_epoch(producer_epoch, first_offset)
        if origin == ORIGIN_CLIENT:
            self._check_sequence(producer_epoch, first_seq, first_offset)
        if producer_epoch != self.epoch:
            self.epoch = producer_epoch
            self.batches = []
        batches = self.batches
        batches.append(BatchMetadata(first_seq, last_seq, last_offset, last_offset - first_offset, timestamp))
        if len(batches) > NUM_BATCHES_TO_RETAIN:
            del batches[0]
        self.last_timestamp = timestamp
        if transactional:
            self.transactional = True
        if self.txn_first >= 0:
            if not transactional and origin != ORIGIN_REPLAY:
                raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                                 f"Expected transactional write from producer {self.producer_id} at offset "
                                 f"{first_offset} in partition {self.name}")
        elif transactional:
            self.txn_first = first_offset
            self.started_txn = first_offset

    def append_end_txn_marker(self, commit: bool, coordinator_epoch: int, producer_epoch: int, offset: int,
                              timestamp: int) -> CompletedTxn | None:
        # Kafka (transaction.version 1) checks nothing else: a marker is written whether or not
        # a transaction is open (an entry is created for an unknown producer), a higher epoch
        # becomes the producer's epoch, and an admin's marker (KIP-664) is fenced like any
        # other by a lower coordinator epoch (-1 included).
        self._check_producer_epoch(producer_epoch, offset)
        if self.coordinator_epoch > coordinator_epoch and self.origin != ORIGIN_REPLAY:
            raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                             f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in "
                             f"partition {self.name}: {coordinator_epoch} (zombie), {self.coordinator_epoch} (current)")
        # only a non-empty transaction completes (a marker without data changes neither LSO nor index)
        completed = CompletedTxn(self.producer_id, self.txn_first, offset, not commit) if self.txn_first >= 0 else None
        if producer_epoch != self.epoch:
            self.epoch = producer_epoch
            self.batches = []
        self.coordinator_epoch = coordinator_epoch
        self.txn_first = -1
        self.started_txn = -1
        self.last_timestamp = timestamp
        self.transactional = True
        return completed


_MARKER_FIELDS = struct.Struct(">7shBhiB")  # records.MARKER_RECORD_HEAD, type, value length, version, epoch, headers


def parse_marker(batch: bytes | bytearray | memoryview, pos: int = 0) -> tuple[bool, int, int] | None:
    """``(is_commit, coordinator_epoch, timestamp)`` of the COMMIT/ABORT marker batch at ``pos``,
    None for an empty control batch (cleaned) or a control record that is not a marker."""
    header = rec.parse_header(batch, pos)
    if header.size == rec.MARKER_SIZE and header.records_count == 1 and not header.compression:
        # the one shape markers have (build_control_batch's, Kafka's): read in place
        p = pos + rec.HEADER_SIZE
        record = _MARKER_FIELDS.unpack_from(batch, p)
        if record[0] == rec.MARKER_RECORD_HEAD and record[2] == 0x0C and record[5] == 0 and record[3] >= 0:
            ctype, epoch = record[1], record[4]
            if ctype in (rec.ControlRecordType.COMMIT, rec.ControlRecordType.ABORT):
                ts = header.max_timestamp if header.attributes & rec.TIMESTAMP_TYPE_MASK else header.base_timestamp
                return ctype == rec.ControlRecordType.COMMIT, epoch, ts
    header, records = rec.decode_batch(batch, pos)
    if not records:
        return None
    ctype, coordinator_epoch = rec.parse_control_record(records[0])
    if ctype not in (rec.ControlRecordType.COMMIT, rec.ControlRecordType.ABORT):
        return None
    return ctype == rec.ControlRecordType.COMMIT, coordinator_epoch, records[0].timestamp


class CorruptSnapshotError(Exception):
    pass


def snapshot_path(log_dir: str, offset: int) -> str:
    return os.path.join(log_dir, f"{offset:020d}{SNAPSHOT_SUFFIX}")


def encode_snapshot(entries) -> bytes:
    """Kafka's ``ProducerStateManager.writeSnapshot`` bytes for ``entries``."""
    body = bytearray(_SNAP_COUNT.pack(len(entries)))
    pack = _SNAP_ENTRY.pack
    for e in entries:
        if e.batches:
            last = e.batches[-1]
            last_seq, last_offset, delta = last.last_seq, last.last_offset, last.offset_delta
        else:
            last_seq, last_offset, delta = NO_SEQUENCE, -1, 0
        body += pack(e.producer_id, e.producer_epoch, last_seq, last_offset, delta, e.last_timestamp,
                     e.coordinator_epoch, e.current_txn_first_offset)
    return _SNAP_HEADER.pack(SNAPSHOT_VERSION, rec.crc32c(bytes(body))) + bytes(body)


def decode_snapshot(data: bytes, path: str = "<buffer>") -> list[ProducerStateEntry]:
    """Kafka's ``ProducerStateManager.readSnapshot``; CorruptSnapshotError if invalid."""
    if len(data) < _SNAP_HEADER.size + _SNAP_COUNT.size:
        raise CorruptSnapshotError(f"Snapshot {path} is truncated ({len(data)} bytes)")
    version, crc = _SNAP_HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot {path} contained an unknown file version {version}")
    computed = rec.crc32c(data[_CRC_START:])
    if computed != crc:
        raise CorruptSnapshotError(f"Snapshot {path} is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                   f"Computed crc: {computed}")
    (count,) = _SNAP_COUNT.unpack_from(data, _CRC_START)
    if count < 0 or len(data) != _CRC_START + _SNAP_COUNT.size + count * _SNAP_ENTRY.size:
        raise CorruptSnapshotError(f"Snapshot {path} has {len(data)} bytes for {count} entries")
    out = []
    pos = _CRC_START + _SNAP_COUNT.size
    for _ in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn_first = _SNAP_ENTRY.unpack_from(data, pos)
        pos += _SNAP_ENTRY.size
        batches = []
        if last_offset >= 0:
            batches.append(BatchMetadata(decrement_sequence(last_seq, delta), last_seq, last_offset, delta, ts))
        out.append(ProducerStateEntry(pid, epoch, coord, ts, txn_first if txn_first >= 0 else -1, batches))
    return out


def list_snapshot_offsets(log_dir: str) -> list[int]:
    try:
        names = os.listdir(log_dir)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for m in map(_SNAPSHOT_FILE.match, names) if m)


class ProducerStateManager:
    SNAPSHOTS_TO_KEEP = 2

    def __init__(self, log_dir: str, topic: str, partition: int, snapshots: list[int] | None = None):
        self.log_dir = log_dir
        self.topic = topic
        self.partition = partition
        self.name = f"{topic}-{partition}"
        self.producers: dict[int, ProducerStateEntry] = {}
        # open transactions, first offset -> producer id; insertion order is offset order
        # (offsets only grow; reloads insert sorted), so the first key is the earliest
        self.ongoing_txns: dict[int, int] = {}
        # offsets of the snapshot files (None: list the directory; a log lists it when it loads)
        self.snapshots: list[int] = list_snapshot_offsets(log_dir) if snapshots is None else snapshots
        self.verifications: dict[int, VerificationStateEntry] = {}
        # offset of the state last written or loaded (Kafka's lastSnapOffset): no new
        # snapshot is written at or below it
        self.last_snap_offset = 0

    # ------------------------------------------------------------------ append path
    def analyze_append(self, buf, batches, meta, is_from_client: bool):
        """Validate the producer-state side of an append whose offsets are assigned.

        ``batches``: ``[(position, header)]``; ``meta``: ``[(position, size, last_offset,
        max_timestamp)]`` (the log's per-batch bookkeeping). Returns a :class:`DuplicateBatch`
        (retry of a retained batch: skip the append), or ``(infos, completed)`` for
        :meth:`apply_append` (None when no batch carries a producer id). Raises KafkaError.
        """
        infos = None
        completed = None
        producers = self.producers
        origin = ORIGIN_CLIENT if is_from_client else ORIGIN_COORDINATOR
        for (pos, h), m in zip(batches, meta):
            pid = h.producer_id
            if pid < 0:
                continue
            if is_from_client:
                entry = producers.get(pid)
                if entry is not None and entry.batches:
                    dup = entry.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)
                    if dup is not None:
                        return DuplicateBatch(dup.last_offset - dup.offset_delta, dup.last_offset, dup.timestamp)
            last = m[2]
            first = last - h.last_offset_delta
            marker = None
            if h.attributes & _CONTROL:
                marker = parse_marker(buf, pos)
                if marker is None:
                    if h.records_count:
                        raise KafkaError(ErrorCode.INVALID_RECORD,
                                         f"Control batch at offset {first} in {self.name} is not a transaction marker")
                    continue  # an empty control batch changes nothing (Kafka)
            if infos is None:
                infos = {}
                info = None
            else:
                info = infos.get(pid)
            if info is None:
                info = infos[pid] = ProducerAppendInfo(self.name, pid, producers.get(pid), origin,
                                                       self.verifications.get(pid))
            if marker is not None:
                commit, coordinator_epoch, ts = marker
                c = info.append_end_txn_marker(commit, coordinator_epoch, h.producer_epoch, first, ts)
                if c is not None:
                    if completed is None:
                        completed = []
                    completed.append(c)
            else:
                info.append_data_batch(h.producer_epoch, h.base_sequence, h.last_sequence, m[3], first, last,
                                       bool(h.attributes & _TRANSACTIONAL))
        if infos is None:
            return None
        return infos, completed

    def apply_append(self, prepared, txn_index: TransactionIndex) -> None:
        """Commit what :meth:`analyze_append` prepared (after the write). Aborted
        transactions go to ``txn_index`` (the segment holding the marker)."""
        infos, completed = prepared
        for info in infos.values():
            self._update(info)
            if info.transactional:
                # the transaction has a first offset here, or is over: nothing left to verify
                self.verifications.pop(info.producer_id, None)
        if completed:
            for c in completed:
                self._complete_txn(c, txn_index)

    def _update(self, info: ProducerAppendInfo) -> None:
        entry = self.producers.get(info.producer_id)
        if entry is None:
            self.producers[info.producer_id] = ProducerStateEntry(
                info.producer_id, info.epoch, info.coordinator_epoch, info.last_timestamp, info.txn_first,
                info.batches)
        else:
            if entry.producer_epoch != info.epoch:
                entry.producer_epoch = info.epoch
                entry.batches = info.batches
            elif info.batches:
                batches = entry.batches
                batches += info.batches
                if len(batches) > NUM_BATCHES_TO_RETAIN:
                    del batches[:-NUM_BATCHES_TO_RETAIN]
            entry.coordinator_epoch = info.coordinator_epoch
            entry.current_txn_first_offset = info.txn_first
            entry.last_timestamp = info.last_timestamp
        if info.started_txn >= 0:
            self.ongoing_txns[info.started_txn] = info.producer_id

    def _complete_txn(self, c: CompletedTxn, txn_index: TransactionIndex | None) -> None:
        if c.is_aborted and txn_index is not None:
            entry = AbortedTxn(c.producer_id, c.first_offset, c.last_offset, self._last_stable_offset_after(c))
            # insert: appends in the normal case; keeps the index ordered and free of
            # duplicates when recovery replays markers that are already indexed
            txn_index.insert(entry)
        self.ongoing_txns.pop(c.first_offset, None)

    def _last_stable_offset_after(self, c: CompletedTxn) -> int:
        """Kafka's ``lastStableOffset(completedTxn)``: the first offset of the earliest other
        open transaction, else the offset after the marker."""
        for first, pid in self.ongoing_txns.items():
            if pid != c.producer_id:
                return first
        return c.last_offset + 1

    # ------------------------------------------------------------------ replay (recovery)
    def replay_batch(self, header: BatchHeader, marker: tuple[bool, int, int] | None,
                     txn_index: TransactionIndex | None) -> None:
        """Rebuild state from a batch already in the log (Kafka's origin REPLICATION: no
        checks). ``marker`` is :func:`parse_marker` of a control batch. An aborted transaction
        completed here is added to ``txn_index`` unless the index already has it."""
        pid = header.producer_id
        info = ProducerAppendInfo(self.name, pid, self.producers.get(pid), ORIGIN_REPLAY)
        completed = None
        if header.attributes & _CONTROL:
            if marker is None:
                return
            commit, coordinator_epoch, ts = marker
            completed = info.append_end_txn_marker(commit, coordinator_epoch, header.producer_epoch,
                                                   header.base_offset, ts)
        else:
            info.append_data_batch(header.producer_epoch, header.base_sequence, header.last_sequence,
                                   header.max_timestamp, header.base_offset,
                                   header.base_offset + header.last_offset_delta,
                                   bool(header.attributes & _TRANSACTIONAL))
        self._update(info)
        if completed is not None:
            self._complete_txn(completed, txn_index)

    # ------------------------------------------------------------------ queries
    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        """Kafka's hasOngoingTransaction: with an epoch, only a transaction of that epoch counts."""
        entry = self.producers.get(producer_id)
        return (entry is not None and entry.current_txn_first_offset >= 0
                and (producer_epoch is None or entry.producer_epoch == producer_epoch))

    def start_transaction_verification(self, producer_id: int, sequence: int, epoch: int, now_ms: int,
                                       supports_epoch_bump: bool = False) -> None:
        """Kafka's maybeCreateVerificationStateEntry (see VerificationStateEntry)."""
        v = self.verifications.get(producer_id)
        if v is None:
            self.verifications[producer_id] = VerificationStateEntry(now_ms, sequence, epoch, supports_epoch_bump)
        else:
            v.maybe_update_lowest_sequence_and_epoch(sequence, epoch)

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest ongoing transaction (caps the LSO), or None."""
        for first in self.ongoing_txns:
            return first
        return None

    def active_producers(self) -> list[ProducerStateEntry]:
        """Entries (producer_id, producer_epoch, last_sequence, last_timestamp, coordinator_epoch,
        current_txn_first_offset) for DescribeProducers."""
        return list(self.producers.values())

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    # ------------------------------------------------------------------ expiry
    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Drop producers idle for ``producer.id.expiration.ms`` with no open transaction
        (Kafka's ``removeExpiredProducers``). Returns how many were dropped."""
        expired = [pid for pid, e in self.producers.items()
                   if e.current_txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        for pid in [pid for pid, v in self.verifications.items() if now_ms - v.timestamp >= expiration_ms]:
            del self.verifications[pid]
        return len(expired)

    def on_log_start_offset_incremented(self, log_start_offset: int, log_end_offset: int) -> None:
        """Retention or DeleteRecords moved the log start offset (Kafka's
        ``onLogStartOffsetIncremented``). Producer state is kept, batch metadata included,
        whatever the log start offset does: since KIP-360 only ``producer.id.expiration.ms``
        removes a producer, so a retry of a batch that is now below the log start is still a
        duplicate (answered with its original offsets), not a new write.

        Snapshots below the new log start are replaced by one at the log end offset, so that
        a restart (clean, or after ``kill -9``: the page cache keeps the file) replays from
        there and still knows these producers. Kafka deletes snapshots at or below the log
        start offset when it reloads, and so may forget them on restart."""
        self.take_snapshot(log_end_offset)
        for off in [o for o in self.snapshots if o < log_start_offset]:
            self._delete_snapshot(off)

    # ------------------------------------------------------------------ snapshots / lifecycle
    def take_snapshot(self, offset: int, sync: bool = False) -> None:
        """Write ``<offset>.snapshot`` (Kafka's format) and keep only the latest two. Like
        Kafka, nothing is written if the log did not grow since the last snapshot or load."""
        if offset <= self.last_snap_offset:
            return
        data = encode_snapshot(list(self.producers.values()))
        path = snapshot_path(self.log_dir, offset)
        tmp = path + ".tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                if sync:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, path)
        except FileNotFoundError:
            return  # the partition directory is gone (topic deleted)
        self.last_snap_offset = offset
        if offset not in self.snapshots:
            self.snapshots.append(offset)
            self.snapshots.sort()
        while len(self.snapshots) > self.SNAPSHOTS_TO_KEEP:
            self._delete_snapshot(self.snapshots[0])

    def latest_snapshot_offset(self) -> int | None:
        return self.snapshots[-1] if self.snapshots else None

    def _latest_snapshot_at_or_below(self, offset: int) -> int | None:
        best = None
        for o in self.snapshots:
            if o <= offset:
                best = o
        return best

    def _delete_snapshot(self, offset: int) -> None:
        try:
            self.snapshots.remove(offset)
        except ValueError:
            pass
        try:
            os.unlink(snapshot_path(self.log_dir, offset))
        except FileNotFoundError:
            pass

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int,
                            snapshots: list[int] | None = None) -> int | None:
        """Forget the in-memory state, delete snapshots beyond ``log_end_offset`` and load the
        latest valid one at or below it. Returns the loaded snapshot's offset (the caller
        replays the log from there), or None when there is none. ``snapshots``: the sorted
        offsets of the snapshot files, if the caller has just listed the directory."""
        self.producers.clear()
        self.ongoing_txns.clear()
        self.snapshots = list_snapshot_offsets(self.log_dir) if snapshots is None else list(snapshots)
        for off in [o for o in self.snapshots if o > log_end_offset]:
            log.info("Partition %s: deleting producer snapshot at offset %d beyond the log end offset %d",
                     self.name, off, log_end_offset)
            self._delete_snapshot(off)
        while self.snapshots:
            off = self.snapshots[-1]
            path = snapshot_path(self.log_dir, off)
            try:
                data = read_file(path)
                if data is None:
                    raise FileNotFoundError(f"{path} is gone")
                entries = decode_snapshot(data, path)
            except (OSError, CorruptSnapshotError) as e:
                log.warning("Partition %s: failed to load producer snapshot %s: %s", self.name, path, e)
                self._delete_snapshot(off)
                continue
            for e in sorted(entries, key=lambda e: (e.current_txn_first_offset < 0, e.current_txn_first_offset)):
                self.producers[e.producer_id] = e
                if e.current_txn_first_offset >= 0:
                    self.ongoing_txns[e.current_txn_first_offset] = e.producer_id
            log.debug("Partition %s: loaded %d producers from snapshot at offset %d", self.name, len(entries), off)
            self.last_snap_offset = off
            return off
        self.last_snap_offset = log_start_offset
        return None

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The log was emptied: no producer state, no snapshots."""
        self.producers.clear()
        self.ongoing_txns.clear()
        for off in list(self.snapshots):
            self._delete_snapshot(off)
        for off in list_snapshot_offsets(self.log_dir):
            self._delete_snapshot(off)
        self.last_snap_offset = offset

    def close(self) -> None:
        pass
