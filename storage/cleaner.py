"""Log compaction for ``cleanup.policy=compact`` (Kafka's ``LogCleaner``, ``Cleaner``,
``LogCleanerManager``, ``OffsetMap``, ``CleanedTransactionMetadata``).

A compacted log is two sections: the *clean* head, already compacted, then the
*dirty* tail since the last cleaning (``cleaner-offset-checkpoint`` in each log
dir remembers the first dirty offset per partition, as Kafka does). A round:

1. :meth:`LogCleaner.grab_filthiest_log` picks the compacted log with the
   largest dirty ratio (dirty bytes / total bytes over the cleanable part) above
   ``min.cleanable.dirty.ratio``, or one whose dirty data is older than
   ``max.compaction.lag.ms``. Cleaning never goes past the *first uncleanable
   offset*: min(last stable offset, active segment base, first segment newer than
   ``min.compaction.lag.ms``), rounded down to a segment base, so the active
   segment and open transactions are never touched.
2. :meth:`Cleaner.build` (may run in a worker thread: it only reads immutable,
   non-active segment files and writes ``.cleaned`` files) builds the
   :class:`OffsetMap` (key -> latest offset) over the dirty range, skipping
   aborted transactions, then rewrites every segment from the start of the log
   up to the map's end, in groups of adjacent segments that fit in
   ``segment.bytes`` (Kafka's ``groupSegmentsBySize``), keeping per batch (Kafka's
   ``MemoryRecords.filterTo`` with the cleaner's ``RecordFilter``):

   * a record whose key's latest offset is its own (or that lies past the map);
     records without a key are dropped (invalid in a compacted topic);
   * a tombstone (null value) until its batch's delete horizon passes: the first
     cleaning that retains it rewrites the batch with attribute bit 6
     (``hasDeleteHorizonMs``) and ``baseTimestamp = now + delete.retention.ms``,
     a later cleaning after that time drops it;
   * no record of an aborted transaction;
   * transaction markers until their transaction's data is all gone (COMMIT: no
     batch of it seen in this pass; ABORT: none seen), and then still until the
     marker's own delete horizon passes (set the same way as for tombstones);
   * the last batch of every active producer (emptied to a header with 0 records
     if nothing in it survives) so sequence numbers and epochs survive a reload,
     and the last batch before the first uncleanable offset.

   Surviving batches keep their base offset, last offset delta, producer fields
   and codec: unchanged batches are copied byte for byte, others re-encoded
   with the same codec and a fresh CRC.
3. :meth:`LogCleaner.commit` (the log's owner: the trio thread in the broker)
   swaps each cleaned segment in, Kafka's way: ``.cleaned`` files are fsynced and
   renamed to ``.swap`` (the log file last: ``<base>.log.swap`` existing is the
   commit point), the replaced segments are deleted, the ``.swap`` files take the
   final names. :func:`complete_interrupted_swaps` (called when a log is loaded)
   finishes a swap a crash interrupted after its commit point; anything before
   it (``.cleaned`` files, index ``.swap`` files without a log ``.swap``) is
   deleted. Offsets, the log end offset and producer state never change.
"""
from __future__ import annotations

import heapq
import logging
import os
import struct
import threading
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

from minikafka.protocol import record_walk as walk
from minikafka.protocol import records as rec
from minikafka.protocol.errors import KafkaError
from minikafka.storage.checkpoint import OffsetCheckpointFile, fsync_dir
from minikafka.storage.segment import (CLEANED_SUFFIX, INDEX_SUFFIX, INT32_MAX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX,
                             TXN_INDEX_SUFFIX, LogSegment, filename_prefix)
from minikafka.storage.transaction_index import AbortedTxn
from minikafka.storage.validator import snappy_block_limit

log = logging.getLogger("minikafka.storage.cleaner")

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
DEDUPE_BUFFER_LOAD_FACTOR = 0.9     # log.cleaner.io.buffer.load.factor
BYTES_PER_MAP_ENTRY = 24            # Kafka's SkimpyOffsetMap: 16-byte MD5 + 8-byte offset
DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024

_CONTROL = rec.CONTROL_FLAG
_HORIZON = rec.DELETE_HORIZON_FLAG
_ATTR = struct.Struct(">h")
_CRC = struct.Struct(">I")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_READ_CHUNK = 1 << 20
_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


class LogCleaningAborted(Exception):
    """The log changed (segments deleted, log closed) or the broker is stopping: the round
    is dropped and its ``.cleaned`` files deleted (Kafka's ``LogCleaningAbortedException``)."""


# ---------------------------------------------------------------------------
# OffsetMap
# ---------------------------------------------------------------------------

class OffsetMap:
    """key -> offset of its latest record in the dirty range (Kafka's ``OffsetMap``; keys
    are kept whole rather than as MD5 digests). ``max_entries`` plays the role of
    ``log.cleaner.dedupe.buffer.size``: the map fills up and the round stops at that point."""

    def __init__(self, max_entries: int):
        self.max_entries = max(1, max_entries)
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self._map[key] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        return self._map.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    @property
    def full(self) -> bool:
        return len(self._map) >= self.max_entries

    @property
    def utilization(self) -> float:
        return len(self._map) / self.max_entries

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1


# ---------------------------------------------------------------------------
# transactions
# ---------------------------------------------------------------------------

class _AbortedTxnMetadata:
    __slots__ = ("txn", "last_observed_batch_offset")

    def __init__(self, txn: AbortedTxn):
        self.txn = txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """Transaction state carried through one cleaning pass (Kafka's class of that name):
    which batches belong to aborted transactions (discard), and whether a marker's
    transaction still has data in the log (retain the marker)."""

    def __init__(self):
        self._aborted: list[tuple[int, int, AbortedTxn]] = []   # heap by first offset
        self._seq = 0
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, _AbortedTxnMetadata] = {}
        self.cleaned_index: list[AbortedTxn] | None = None      # entries for the segment being written

    def add_aborted_transactions(self, txns) -> None:
        for t in txns:
            self._seq += 1
            heapq.heappush(self._aborted, (t.first_offset, self._seq, t))

    def _consume_aborted_up_to(self, offset: int) -> None:
        heap = self._aborted
        while heap and heap[0][0] <= offset:
            _, _, t = heapq.heappop(heap)
            if t.producer_id not in self.ongoing_aborted:
                self.ongoing_aborted[t.producer_id] = _AbortedTxnMetadata(t)

    def on_control_batch_read(self, h: rec.BatchHeader, control_type: int | None) -> bool:
        """A marker was traversed; True if it may be discarded (its transaction has no data left).
        ``control_type`` is None for an empty (already cleaned) control batch."""
        self._consume_aborted_up_to(h.base_offset + h.last_offset_delta)
        if control_type is None:
            return True
        pid = h.producer_id
        if control_type == rec.ControlRecordType.ABORT:
            meta = self.ongoing_aborted.pop(pid, None)
            if meta is not None and meta.last_observed_batch_offset is not None:
                # retain the marker until every batch of the transaction is gone
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta.txn)
                return False
            return True
        if control_type == rec.ControlRecordType.COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch_read(self, h: rec.BatchHeader) -> bool:
        """A data batch was traversed; True if it belongs to an aborted transaction."""
        last = h.base_offset + h.last_offset_delta
        self._consume_aborted_up_to(last)
        if h.attributes & rec.TRANSACTIONAL_FLAG:
            meta = self.ongoing_aborted.get(h.producer_id)
            if meta is not None:
                meta.last_observed_batch_offset = last
                return True
            self.ongoing_committed.add(h.producer_id)
        return False


# ---------------------------------------------------------------------------
# what to clean
# ---------------------------------------------------------------------------

class SegmentInfo(NamedTuple):
    """An immutable (non-active) segment as seen when the round was planned."""
    segment: LogSegment
    base_offset: int
    log_path: str
    size: int
    next_base: int             # base offset of the following segment
    index_bytes: int
    time_index_bytes: int
    mtime: float
    aborted: tuple             # aborted transactions overlapping [base_offset, next_base)


class LastRecord(NamedTuple):
    last_data_offset: int      # -1: none (the producer's last entry is a marker)
    producer_epoch: int


@dataclass
class LogToClean:
    """A log picked for cleaning, with everything the worker needs captured up front
    (Kafka's ``LogToClean``)."""
    log: object
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False
    now_ms: int = 0
    segments: list = field(default_factory=list)          # SegmentInfo, base < first_uncleanable_offset
    map_aborted: list = field(default_factory=list)       # aborted txns over the dirty range
    dirty_start_position: int = 0                          # file position of first_dirty_offset's batch
    last_records: dict = field(default_factory=dict)      # producer id -> LastRecord
    delete_retention_ms: int = 0
    segment_bytes: int = 0
    max_index_bytes: int = 0
    index_interval_bytes: int = 4096
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass
class CleanerStats:
    messages_read: int = 0
    bytes_read: int = 0
    messages_written: int = 0
    bytes_written: int = 0
    map_messages_read: int = 0
    invalid_messages: int = 0
    aborted_discarded: int = 0
    start: float = field(default_factory=time.monotonic)
    end: float = 0.0

    @property
    def elapsed(self) -> float:
        return (self.end or time.monotonic()) - self.start


@dataclass
class CleanedSegment:
    """A group's replacement, written as ``.cleaned`` files, not yet swapped in."""
    base_offset: int
    old: list                  # SegmentInfo replaced
    size: int
    entries: int
    aborted: int


@dataclass
class CleanResult:
    end_offset: int            # first offset not cleaned (the new first dirty offset)
    cleaned: list              # CleanedSegment per group, in log order
    stats: CleanerStats


# ---------------------------------------------------------------------------
# file helpers
# ---------------------------------------------------------------------------

def _paths(dir_path: str, base: int) -> dict[str, str]:
    p = os.path.join(dir_path, filename_prefix(base))
    return {s: p + s for s in (LOG_SUFFIX,) + _INDEX_SUFFIXES}


def _iter_file_batches(path: str, start: int, end: int,
                       cancelled: threading.Event | None = None) -> Iterator[tuple[int, rec.BatchHeader, bytes]]:
    """``(position, header, batch bytes)`` for the whole batches in ``path[start:end]``."""
    with open(path, "rb", buffering=0) as f:
        pos = start
        buf = b""
        buf_start = start
        while end - pos >= rec.HEADER_SIZE:
            off = pos - buf_start
            if len(buf) - off < rec.HEADER_SIZE:
                if cancelled is not None and cancelled.is_set():
                    raise LogCleaningAborted("cancelled")
                buf = os.pread(f.fileno(), min(_READ_CHUNK, end - pos), pos)
                buf_start, off = pos, 0
                if len(buf) < rec.HEADER_SIZE:
                    return
            h = rec.parse_header(buf, off)
            size = h.batch_length + rec.LOG_OVERHEAD
            if h.batch_length < rec.MIN_BATCH_LENGTH or pos + size > end:
                return
            if len(buf) - off < size:
                buf = os.pread(f.fileno(), max(size, min(_READ_CHUNK, end - pos)), pos)
                buf_start, off = pos, 0
                if len(buf) < size:
                    return
            yield pos, h, buf[off:off + size]
            pos += size


def _file_end_offset(path: str, base: int) -> int:
    """Offset after the last whole batch of a segment file (``base`` if none)."""
    end = base
    try:
        size = os.path.getsize(path)
    except OSError:
        return end
    for _, h, _ in _iter_file_batches(path, 0, size):
        end = h.base_offset + h.last_offset_delta + 1
    return end


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def delete_cleaned_files(dir_path: str, base: int) -> None:
    for p in _paths(dir_path, base).values():
        _unlink(p + CLEANED_SUFFIX)
        _unlink(p + SWAP_SUFFIX)


def complete_interrupted_swaps(dir_path: str, names: list[str] | None = None) -> list[int]:
    """Finish swaps that a crash interrupted after their commit point (``<base>.log.swap``
    exists, so the cleaned segment and its indexes are complete and synced): delete the
    replaced segments (every other segment file whose base offset lies inside the swap's
    offset range) and give the ``.swap`` files their final names. Returns the base offsets
    of the segments swapped in (the caller re-validates them). Earlier leftovers
    (``.cleaned``, index ``.swap`` without a log ``.swap``) are left for the caller's
    stray-file sweep. Kafka's ``LogLoader`` does the same with its ``.swap`` files.
    ``names``: the directory's listing, if the caller has it."""
    if names is None:
        try:
            names = os.listdir(dir_path)
        except FileNotFoundError:
            return []
    swap_name = LOG_SUFFIX + SWAP_SUFFIX
    bases = sorted(int(n[:20]) for n in names
                   if n.endswith(swap_name) and len(n) == 20 + len(swap_name) and n[:20].isdigit())
    done = []
    for base in bases:
        paths = _paths(dir_path, base)
        swap_log = paths[LOG_SUFFIX] + SWAP_SUFFIX
        end = _file_end_offset(swap_log, base)
        for n in os.listdir(dir_path):
            if len(n) < 21 or not n[:20].isdigit() or n.endswith((SWAP_SUFFIX, CLEANED_SUFFIX)):
                continue
            b, suffix = int(n[:20]), n[20:]
            if base < b < end and suffix in (LOG_SUFFIX,) + _INDEX_SUFFIXES:
                log.warning("Completing an interrupted swap in %s: deleting replaced file %s", dir_path, n)
                _unlink(os.path.join(dir_path, n))
        for suffix in _INDEX_SUFFIXES:
            if os.path.exists(paths[suffix] + SWAP_SUFFIX):
                os.replace(paths[suffix] + SWAP_SUFFIX, paths[suffix])
        os.replace(swap_log, paths[LOG_SUFFIX])
        log.warning("Completed the interrupted swap of cleaned segment %s in %s", filename_prefix(base), dir_path)
        done.append(base)
    if done:
        fsync_dir(dir_path)
    return done


class _CleanedSegmentWriter:
    """Writes one group's surviving batches to ``<base>.log.cleaned`` and builds its offset,
    time and transaction indexes the way :meth:`LogSegment.append` would."""

    def __init__(self, dir_path: str, base: int, index_interval_bytes: int):
        self.dir = dir_path
        self.base = base
        self.paths = _paths(dir_path, base)
        self.interval = index_interval_bytes
        self.f = open(self.paths[LOG_SUFFIX] + CLEANED_SUFFIX, "wb")
        self.size = 0
        self.entries = 0
        self.bytes_since = 0
        self.max_ts = -1
        self.max_ts_offset = base
        self.index: list[tuple[int, int]] = []
        self.time: list[tuple[int, int]] = []
        self.aborted: list[AbortedTxn] = []

    def append(self, h: rec.BatchHeader, data: bytes) -> None:
        last = h.base_offset + h.last_offset_delta
        if last - self.base > INT32_MAX:
            raise LogCleaningAborted(f"offset {last} does not fit in a segment based at {self.base}")
        if h.max_timestamp > self.max_ts:
            self.max_ts, self.max_ts_offset = h.max_timestamp, last
        if self.bytes_since > self.interval:
            self.index.append((last - self.base, self.size))
            if not self.time or self.max_ts > self.time[-1][0]:
                self.time.append((self.max_ts, self.max_ts_offset - self.base))
            self.bytes_since = 0
        self.bytes_since += len(data)
        self.f.write(data)
        self.size += len(data)
        self.entries += 1

    def finish(self, mtime: float) -> None:
        """Flush and fsync everything, still under the ``.cleaned`` names."""
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        if self.max_ts >= 0 and (not self.time or self.max_ts > self.time[-1][0]):
            self.time.append((self.max_ts, self.max_ts_offset - self.base))
        blobs = {
            INDEX_SUFFIX: b"".join(_OFFSET_ENTRY.pack(r, p) for r, p in self.index),
            TIME_INDEX_SUFFIX: b"".join(_TIME_ENTRY.pack(t, r) for t, r in self.time),
            TXN_INDEX_SUFFIX: b"".join(t.encode() for t in self.aborted),
        }
        for suffix, blob in blobs.items():
            with open(self.paths[suffix] + CLEANED_SUFFIX, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
        try:
            os.utime(self.paths[LOG_SUFFIX] + CLEANED_SUFFIX, (mtime, mtime))
        except OSError:
            pass

    def discard(self) -> None:
        try:
            self.f.close()
        except OSError:
            pass
        delete_cleaned_files(self.dir, self.base)


# ---------------------------------------------------------------------------
# Cleaner: the work on one log
# ---------------------------------------------------------------------------

def _with_delete_horizon(batch: bytes) -> bytes:
    """Set attribute bit 6 (hasDeleteHorizonMs) and recompute the CRC."""
    buf = bytearray(batch)
    attrs = _ATTR.unpack_from(buf, rec.ATTRIBUTES_OFFSET)[0]
    _ATTR.pack_into(buf, rec.ATTRIBUTES_OFFSET, attrs | _HORIZON)
    _CRC.pack_into(buf, rec.CRC_OFFSET, rec.compute_crc(buf, 0, len(buf)))
    return bytes(buf)


def _rebuild_batch(h: rec.BatchHeader, records: list, delete_horizon_ms: int | None) -> bytes:
    """Kafka's ``buildRetainedRecordsInto``: same base offset, last offset delta, producer
    fields, flags and codec; base timestamp = the delete horizon when there is one."""
    log_append = bool(h.attributes & rec.TIMESTAMP_TYPE_MASK)
    out = rec.build_batch(records, base_offset=h.base_offset, producer_id=h.producer_id,
                          producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                          is_transactional=bool(h.attributes & rec.TRANSACTIONAL_FLAG),
                          is_control=bool(h.attributes & _CONTROL), compression=h.compression,
                          timestamp_type=h.timestamp_type, partition_leader_epoch=h.partition_leader_epoch,
                          last_offset_delta=h.last_offset_delta,
                          max_timestamp=h.max_timestamp if log_append else None,
                          base_timestamp=delete_horizon_ms)
    return _with_delete_horizon(out) if delete_horizon_ms is not None else out


def _empty_batch(h: rec.BatchHeader) -> bytes:
    """Kafka's ``DefaultRecordBatch.writeEmptyHeader``: the header alone, 0 records, kept to
    preserve a producer's last sequence and epoch."""
    return rec.build_batch([], base_offset=h.base_offset, producer_id=h.producer_id,
                           producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                           is_transactional=bool(h.attributes & rec.TRANSACTIONAL_FLAG),
                           is_control=bool(h.attributes & _CONTROL), compression=0,
                           timestamp_type=h.timestamp_type, partition_leader_epoch=h.partition_leader_epoch,
                           last_offset_delta=h.last_offset_delta, base_timestamp=rec.NO_TIMESTAMP,
                           max_timestamp=h.max_timestamp)


def _control_type(data: bytes) -> int | None:
    """The control record type of a control batch, None if the batch is empty."""
    _, records = rec.decode_batch(data)
    if not records:
        return None
    try:
        return int(rec.parse_control_record(records[0])[0])
    except KafkaError:
        return int(rec.ControlRecordType.UNKNOWN)


class Cleaner:
    """Cleans one planned log into ``.cleaned`` files (Kafka's ``Cleaner``). Touches only
    what :class:`LogToClean` captured, so it may run in a worker thread."""

    def __init__(self, max_map_entries: int):
        self.max_map_entries = max_map_entries

    # -------------------------------------------------------------- offset map
    def build_offset_map(self, plan: LogToClean, offset_map: OffsetMap, stats: CleanerStats) -> None:
        """Kafka's ``buildOffsetMap``: latest offset per key over [first dirty, first uncleanable);
        stops early (at a batch boundary) when the map is full."""
        start, end = plan.first_dirty_offset, plan.first_uncleanable_offset
        dirty = [s for s in plan.segments if s.next_base > start and s.base_offset < end]
        txn = CleanedTransactionMetadata()
        txn.add_aborted_transactions(plan.map_aborted)
        for i, seg in enumerate(dirty):
            position = plan.dirty_start_position if i == 0 and seg.base_offset <= start else 0
            for _, h, data in _iter_file_batches(seg.log_path, position, seg.size, plan.cancelled):
                last = h.base_offset + h.last_offset_delta
                if h.attributes & _CONTROL:
                    txn.on_control_batch_read(h, _control_type(data))
                    stats.map_messages_read += 1
                elif txn.on_batch_read(h):
                    stats.map_messages_read += h.records_count
                else:
                    base = h.base_offset

                    def visit(_i, _td, od, _kl, _vl, key):
                        offset = base + od
                        if key is not None and offset >= start:
                            if offset_map.full:
                                raise _MapFull(offset)
                            offset_map.put(key, offset)
                        stats.map_messages_read += 1

                    try:
                        _walk(plan, data, h, visit)
                    except _MapFull as full:
                        log.debug("Offset map for %s is full at offset %d", getattr(plan.log, "name", "?"),
                                  full.args[0])
                        return
                if last >= start:
                    offset_map.update_latest_offset(last)
            # offsets gap at the end of the segment: the map covers up to the next segment
            offset_map.update_latest_offset(min(seg.next_base, end) - 1)

    # -------------------------------------------------------------- grouping
    @staticmethod
    def group_segments_by_size(segments: list, max_size: int, max_index_size: int,
                               first_uncleanable_offset: int) -> list[list]:
        """Kafka's ``groupSegmentsBySize``: adjacent segments whose log data stays within
        ``max_size``, whose index data stays within ``max_index_size``, and whose offsets
        fit a segment's 32-bit relative offsets."""
        grouped = []
        rest = list(segments)
        while rest:
            group = [rest.pop(0)]
            log_size = group[0].size
            index_size = group[0].index_bytes
            time_size = group[0].time_index_bytes
            while rest:
                nxt = rest[0]
                last_of_next = (rest[1].base_offset - 1) if len(rest) > 1 else first_uncleanable_offset - 1
                if not (log_size + nxt.size <= max_size
                        and index_size + nxt.index_bytes <= max_index_size
                        and time_size + nxt.time_index_bytes <= max_index_size
                        and (nxt.size == 0 or last_of_next - group[0].base_offset <= INT32_MAX)):
                    break
                group.append(rest.pop(0))
                log_size += nxt.size
                index_size += nxt.index_bytes
                time_size += nxt.time_index_bytes
            grouped.append(group)
        return grouped

    # -------------------------------------------------------------- the round
    def build(self, plan: LogToClean) -> CleanResult:
        """Build the offset map and write the cleaned groups (``.cleaned`` files). On any
        error the ``.cleaned`` files written so far are deleted."""
        stats = CleanerStats()
        offset_map = OffsetMap(self.max_map_entries)
        self.build_offset_map(plan, offset_map, stats)
        end_offset = offset_map.latest_offset + 1
        to_clean = [s for s in plan.segments if s.base_offset < end_offset]
        groups = self.group_segments_by_size(to_clean, plan.segment_bytes, plan.max_index_bytes,
                                             plan.first_uncleanable_offset)
        txn = CleanedTransactionMetadata()
        cleaned: list[CleanedSegment] = []
        dir_path = plan.log.dir
        try:
            for group in groups:
                cleaned.append(self._clean_segments(plan, group, offset_map, txn, stats))
        except BaseException:
            for c in cleaned:
                delete_cleaned_files(dir_path, c.base_offset)
            raise
        stats.end = time.monotonic()
        return CleanResult(end_offset, cleaned, stats)

    def _clean_segments(self, plan: LogToClean, group: list, offset_map: OffsetMap,
                        txn: CleanedTransactionMetadata, stats: CleanerStats) -> CleanedSegment:
        """Kafka's ``cleanSegments``: one group into one ``.cleaned`` segment."""
        base = group[0].base_offset
        writer = _CleanedSegmentWriter(plan.log.dir, base, plan.index_interval_bytes)
        txn.cleaned_index = writer.aborted
        try:
            for seg in group:
                txn.add_aborted_transactions(seg.aborted)
                self._clean_into(plan, seg, writer, offset_map, txn, stats)
            writer.finish(group[-1].mtime)
        except BaseException:
            writer.discard()
            raise
        finally:
            txn.cleaned_index = None
        return CleanedSegment(base, list(group), writer.size, writer.entries, len(writer.aborted))

    def _clean_into(self, plan: LogToClean, seg: SegmentInfo, writer: _CleanedSegmentWriter,
                    offset_map: OffsetMap, txn: CleanedTransactionMetadata, stats: CleanerStats) -> None:
        """Kafka's ``cleanInto`` with the cleaner's ``RecordFilter`` (see the module doc)."""
        now = plan.now_ms
        upper_bound = plan.first_uncleanable_offset
        last_records = plan.last_records
        latest = offset_map.latest_offset
        for _, h, data in _iter_file_batches(seg.log_path, 0, seg.size, plan.cancelled):
            stats.bytes_read += len(data)
            stats.messages_read += h.records_count
            is_control = bool(h.attributes & _CONTROL)
            has_horizon = bool(h.attributes & _HORIZON)
            records = None
            if is_control:
                _, records = rec.decode_batch(data)
                ctype = None
                if records:
                    try:
                        ctype = int(rec.parse_control_record(records[0])[0])
                    except KafkaError:
                        ctype = int(rec.ControlRecordType.UNKNOWN)
                can_discard = txn.on_control_batch_read(h, ctype)
                discard_records = can_discard and has_horizon and h.base_timestamp <= now
            else:
                can_discard = txn.on_batch_read(h)
                discard_records = can_discard
                if can_discard:
                    stats.aborted_discarded += h.records_count
            last_offset = h.base_offset + h.last_offset_delta
            lr = last_records.get(h.producer_id) if h.producer_id >= 0 else None
            if lr is not None and (lr.last_data_offset == last_offset if lr.last_data_offset >= 0
                                   else is_control and h.producer_epoch == lr.producer_epoch):
                retention = "retain_empty"       # the producer's last batch: keeps its sequence/epoch
            elif last_offset + 1 == upper_bound:
                retention = "retain_empty"       # the round's last batch keeps the last offset
            elif discard_records:
                continue                         # DELETE
            else:
                retention = "delete_empty"
            marker_for_empty_txn = can_discard and is_control

            if discard_records:
                retained, whole, tombstones = 0, h.records_count == 0, False
            elif is_control:
                retained, whole, tombstones = len(records), True, False
            else:
                kept = _Retained(h, now, latest, offset_map, stats)
                _walk(plan, data, h, kept.visit)
                retained, whole, tombstones = kept.count, kept.count == h.records_count, kept.tombstones

            if retained:
                need_horizon = (tombstones or marker_for_empty_txn) and not has_horizon
                if whole and not need_horizon:
                    out = data
                else:
                    horizon = now + plan.delete_retention_ms if need_horizon else (
                        h.base_timestamp if has_horizon else None)
                    out = (_rebuild_batch(h, records, horizon) if is_control
                           else _rebuild_retained(plan, data, h, kept, horizon))
            elif retention == "retain_empty":
                out = data if (h.records_count == 0 and whole) else _empty_batch(h)
            else:
                continue
            writer.append(rec.parse_header(out), out)
            stats.bytes_written += len(out)
            stats.messages_written += retained


class _MapFull(Exception):
    pass


class _Retained:
    """Which records of one data batch the cleaner's filter keeps (Kafka's ``RecordFilter``:
    the latest record of each key, a tombstone until its delete horizon, everything past the
    offset map), found in one walk of the batch without holding its records."""

    def __init__(self, h: rec.BatchHeader, now: int, latest: int, offset_map: OffsetMap, stats: CleanerStats):
        self.h, self.latest, self.get, self.stats = h, latest, offset_map.get, stats
        self.retain_deletes = not h.attributes & _HORIZON or now < h.base_timestamp
        self.log_append = bool(h.attributes & rec.TIMESTAMP_TYPE_MASK)
        self.keep = bytearray((h.records_count + 7) >> 3)     # a bit per record
        self.count = 0
        self.tombstones = False
        self.first_ts = None
        self.max_ts = rec.NO_TIMESTAMP

    def timestamp(self, td: int) -> int:
        h = self.h
        return h.max_timestamp if self.log_append else _java_long(h.base_timestamp + td)

    def visit(self, i, td, od, _kl, vl, key):
        offset = self.h.base_offset + od
        if offset > self.latest:
            pass
        elif key is None:
            self.stats.invalid_messages += 1
            return
        elif not (offset >= self.get(key) and (vl >= 0 or self.retain_deletes)):
            return
        self.keep[i >> 3] |= 1 << (i & 7)
        self.count += 1
        if vl < 0:
            self.tombstones = True
        ts = self.timestamp(td)
        if self.first_ts is None:
            self.first_ts = ts
        if ts > self.max_ts:
            self.max_ts = ts


def _java_long(x: int) -> int:
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def _block_limit(plan: LogToClean) -> int:
    config = getattr(plan.log, "config", None)
    return snappy_block_limit(config) if config is not None else 32 << 20


def _walk(plan: LogToClean, data, h: rec.BatchHeader, visit) -> None:
    """Every record of a stored batch handed to ``visit`` with its key (record_walk), in this
    thread; stops when the round is cancelled."""
    _drive(walk.walk_records(data, 0, h.size, h.records_count, h.compression, visit=visit, keys=True,
                             block_limit=_block_limit(plan)), plan.cancelled)


def _drive(steps, cancelled: threading.Event):
    try:
        step = next(steps)
        while True:
            if cancelled.is_set():
                raise LogCleaningAborted("cancelled")
            if step is not None:
                step()
            step = steps.send(None)
    except StopIteration as done:
        return done.value
    finally:
        steps.close()


def _rebuild_retained(plan: LogToClean, data, h: rec.BatchHeader, kept: _Retained, horizon: int | None) -> bytes:
    """Kafka's ``buildRetainedRecordsInto`` for a data batch: the kept records written again
    under the same codec, base offset, last offset delta and producer fields, timestamps from
    the delete horizon when there is one (else the first kept record's), the batch's
    LogAppendTime kept; streamed, so a record of any size passes in bounded memory."""
    base_ts = horizon if horizon is not None else kept.first_ts
    keep = kept.keep

    def fields(i, td, od):
        return (_java_long(kept.timestamp(td) - base_ts), od) if keep[i >> 3] >> (i & 7) & 1 else None

    section = _drive(walk.reencode_records(data, 0, h.size, h.records_count, h.compression, h.compression, fields,
                                           block_limit=_block_limit(plan)), plan.cancelled)
    out = rec.frame_batch(section, compression=h.compression, last_offset_delta=h.last_offset_delta,
                          base_timestamp=base_ts, max_timestamp=h.max_timestamp if kept.log_append else kept.max_ts,
                          producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                          is_transactional=h.is_transactional, records_count=kept.count, base_offset=h.base_offset,
                          timestamp_type=h.timestamp_type, partition_leader_epoch=h.partition_leader_epoch)
    return _with_delete_horizon(out) if horizon is not None else out


# ---------------------------------------------------------------------------
# LogCleaner: picking logs, checkpoints, swapping in
# ---------------------------------------------------------------------------

def _log_segments(log, from_offset: int, to_offset: int) -> list[LogSegment]:
    """Segments holding offsets in [from_offset, to_offset) (Kafka's ``logSegments(from, to)``)."""
    bases = log._bases
    i = max(0, bisect_right(bases, from_offset) - 1)
    out = []
    for seg in log.segments[i:]:
        if seg.base_offset >= to_offset:
            break
        out.append(seg)
    return out


class LogCleaner:
    """Compaction for every ``cleanup.policy=compact`` log of a :class:`LogManager`.

    The broker calls :meth:`plan` (owner thread), :meth:`Cleaner.build` via
    :meth:`build` (any thread), :meth:`commit` (owner thread); :meth:`clean_one`
    does all three in a row."""

    def __init__(self, log_manager, dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE,
                 max_map_entries: int | None = None):
        self.log_manager = log_manager
        if max_map_entries is None:
            max_map_entries = int(dedupe_buffer_size // BYTES_PER_MAP_ENTRY * DEDUPE_BUFFER_LOAD_FACTOR)
        self.cleaner = Cleaner(max_map_entries)
        self.checkpoints: dict[tuple[str, int], int] = {}
        self.uncleanable: set[tuple] = set()      # (topic, partition, topic id) skipped after an error
        self.in_progress: LogToClean | None = None
        # topic id behind each checkpoint entry: a topic deleted and re-created under the same
        # name must not inherit the old log's first dirty offset (Kafka drops the entry on delete)
        self._topic_ids: dict[tuple[str, int], object] = {}
        for d in log_manager.log_dirs:
            self.checkpoints.update(OffsetCheckpointFile(os.path.join(d, CLEANER_OFFSET_CHECKPOINT)).read())

    # -------------------------------------------------------------- selection
    def cleanable_offsets(self, lg, now_ms: int) -> tuple[int, int]:
        """Kafka's ``cleanableOffsets``: (first dirty offset, first uncleanable dirty offset)."""
        start = lg.log_start_offset
        tp = (lg.topic, lg.partition)
        if self._topic_ids.setdefault(tp, lg.topic_id) != lg.topic_id:
            self._topic_ids[tp] = lg.topic_id
            self.checkpoints.pop(tp, None)
        first_dirty = self.checkpoints.get(tp, start)
        if first_dirty < start or first_dirty > lg.log_end_offset:
            first_dirty = start
        candidates = [lg.last_stable_offset, lg.active_segment.base_offset]
        lag = max(lg.config.min_compaction_lag_ms, 0)
        if lag > 0:
            for seg in _log_segments(lg, first_dirty, lg.active_segment.base_offset):
                if seg.largest_timestamp > now_ms - lag:
                    candidates.append(seg.base_offset)
                    break
        return first_dirty, max(first_dirty, min(candidates))

    def max_compaction_delay(self, lg, first_dirty: int, now_ms: int) -> int:
        """Kafka's ``maxCompactionDelay``: how far past ``max.compaction.lag.ms`` the oldest dirty
        (non-active) segment's first batch is; 0 if not."""
        lag = max(lg.config.max_compaction_lag_ms, 0)
        stamps = [s.rolling_based_timestamp for s in _log_segments(lg, first_dirty, lg.active_segment.base_offset)]
        stamps = [t for t in stamps if t is not None and t > 0]
        if not stamps:
            return 0
        clean_until = now_ms - lag
        earliest = min(stamps)
        return clean_until - earliest if earliest < clean_until else 0

    def log_to_clean(self, lg, now_ms: int) -> LogToClean:
        first_dirty, uncleanable = self.cleanable_offsets(lg, now_ms)
        # the first uncleanable offset rounds down to a segment base (the segment holding it)
        if uncleanable >= lg.active_segment.base_offset:
            first_uncleanable = lg.active_segment.base_offset
        else:
            first_uncleanable = lg._bases[max(0, bisect_right(lg._bases, uncleanable) - 1)]
        clean_bytes = sum(s.size for s in _log_segments(lg, -1, first_dirty))
        cleanable = sum(s.size for s in _log_segments(lg, min(first_dirty, first_uncleanable), first_uncleanable))
        need_now = self.max_compaction_delay(lg, first_dirty, now_ms) > 0
        return LogToClean(lg, first_dirty, first_uncleanable, clean_bytes, cleanable, need_now, now_ms)

    def grab_filthiest_log(self, now_ms: int) -> LogToClean | None:
        """Kafka's ``grabFilthiestCompactedLog``: the cleanable compacted log with the highest
        dirty ratio (above ``min.cleanable.dirty.ratio``, or any dirty data when
        ``max.compaction.lag.ms`` is exceeded)."""
        best = None
        for lg in self.log_manager.logs():
            if not lg.config.compact_enabled or getattr(lg, "_closed", False):
                continue
            if (lg.topic, lg.partition, lg.topic_id) in self.uncleanable:
                continue
            if self.log_manager.future_log(lg.topic, lg.partition) is not None:
                continue  # moving to another log dir: not cleaned meanwhile (Kafka pauses its cleaning)
            ltc = self.log_to_clean(lg, now_ms)
            if not ((ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                    or ltc.cleanable_ratio > lg.config.min_cleanable_dirty_ratio):
                continue
            if best is None or ltc.cleanable_ratio > best.cleanable_ratio:
                best = ltc
        return best

    # -------------------------------------------------------------- the three steps
    def plan(self, now_ms: int | None = None, lg=None) -> LogToClean | None:
        """Pick a log (or take ``lg``, if it has anything cleanable) and capture what
        :meth:`build` needs. Runs in the log owner's thread."""
        if now_ms is None:
            now_ms = int(time.time() * 1000)
        ltc = self.grab_filthiest_log(now_ms) if lg is None else self.log_to_clean(lg, now_ms)
        if ltc is None or ltc.cleanable_bytes <= 0 or ltc.first_uncleanable_offset <= ltc.log.segments[0].base_offset:
            return None
        lg = ltc.log
        cfg = lg.config
        ltc.delete_retention_ms = cfg.delete_retention_ms
        ltc.segment_bytes = cfg.effective_segment_bytes
        ltc.max_index_bytes = cfg.segment_index_bytes
        ltc.index_interval_bytes = cfg.index_interval_bytes
        segs = [s for s in lg.segments if s.base_offset < ltc.first_uncleanable_offset]
        infos = []
        for i, seg in enumerate(segs):
            nxt = lg.segments[i + 1].base_offset
            try:
                mtime = os.path.getmtime(seg.log_path)
            except OSError:
                mtime = time.time()
            infos.append(SegmentInfo(seg, seg.base_offset, seg.log_path, seg.size, nxt,
                                     seg.offset_index.entries * 8, seg.time_index.entries * 12, mtime,
                                     tuple(lg.collect_aborted_txns(seg.base_offset, nxt))))
        ltc.segments = infos
        ltc.map_aborted = lg.collect_aborted_txns(ltc.first_dirty_offset, ltc.first_uncleanable_offset)
        first = _log_segments(lg, ltc.first_dirty_offset, ltc.first_dirty_offset + 1)
        ltc.dirty_start_position = first[0].offset_index.lookup(ltc.first_dirty_offset)[1] if first else 0
        ltc.last_records = {e.producer_id: LastRecord(e.last_data_offset, e.producer_epoch)
                            for e in lg.producer_state.active_producers()}
        self.in_progress = ltc
        return ltc

    def build(self, plan: LogToClean) -> CleanResult:
        """The heavy part (any thread)."""
        return self.cleaner.build(plan)

    def commit(self, plan: LogToClean, result: CleanResult) -> CleanerStats:
        """Swap the cleaned segments in and checkpoint the new first dirty offset (owner thread).
        Raises :class:`LogCleaningAborted` (after deleting the ``.cleaned`` files) if the log
        changed underneath."""
        lg = plan.log
        current = -1                 # index of the group being swapped in
        try:
            self._check_still_valid(plan, result)
            for current, c in enumerate(result.cleaned):
                self._swap_in(lg, c)
        except BaseException:
            # groups not swapped in yet are dropped (_swap_in itself cleans up a group that
            # failed before its commit point; one that failed after it is completed on the
            # next load by complete_interrupted_swaps)
            for c in result.cleaned[current + 1:]:
                delete_cleaned_files(lg.dir, c.base_offset)
            self.in_progress = None
            raise
        self.in_progress = None
        self.checkpoints[(lg.topic, lg.partition)] = max(result.end_offset, plan.first_dirty_offset)
        self._write_checkpoint(lg)
        s = result.stats
        log.info("Cleaned log %s: %d segment(s) into %d, %d -> %d bytes (%.1f%% smaller), %d -> %d records, "
                 "%d aborted records dropped, %d records without key dropped, first dirty offset now %d (%.3fs)",
                 lg.name, sum(len(c.old) for c in result.cleaned), len(result.cleaned), s.bytes_read,
                 s.bytes_written, 100.0 * (1 - s.bytes_written / s.bytes_read) if s.bytes_read else 0.0,
                 s.messages_read, s.messages_written, s.aborted_discarded, s.invalid_messages,
                 result.end_offset, s.elapsed)
        return s

    def abort(self, plan: LogToClean) -> None:
        """Ask a running :meth:`build` to stop, e.g. at shutdown (Kafka's ``checkDone``)."""
        plan.cancelled.set()

    def clean_one(self, now_ms: int | None = None, lg=None) -> CleanerStats | None:
        """Plan, build and commit one round synchronously; None if nothing needed cleaning."""
        plan = self.plan(now_ms, lg)
        if plan is None:
            return None
        try:
            result = self.build(plan)
        except BaseException:
            self.in_progress = None
            raise
        return self.commit(plan, result)

    def handle_error(self, plan: LogToClean, error: BaseException) -> None:
        """A round failed. Aborted rounds (log changed, closed or deleted; shutdown) are just
        dropped; after any other error the partition is skipped from now on (Kafka marks it
        uncleanable) and the error logged."""
        lg = plan.log
        self.in_progress = None
        if isinstance(error, LogCleaningAborted) or getattr(lg, "_closed", False):
            log.info("Cleaning of log %s aborted: %s", lg.name, error)
            return
        self.uncleanable.add((lg.topic, lg.partition, lg.topic_id))
        log.error("Log %s marked uncleanable after an error while cleaning", lg.name, exc_info=error)

    # -------------------------------------------------------------- internals
    @staticmethod
    def _check_still_valid(plan: LogToClean, result: CleanResult) -> None:
        lg = plan.log
        if getattr(lg, "_closed", False):
            raise LogCleaningAborted(f"log {lg.name} was closed")
        present = {id(s) for s in lg.segments[:-1]}
        for c in result.cleaned:
            for info in c.old:
                if id(info.segment) not in present or info.segment.size != info.size:
                    raise LogCleaningAborted(f"segment {info.base_offset} of {lg.name} changed during cleaning")

    @staticmethod
    def _swap_in(lg, c: CleanedSegment) -> None:
        """Kafka's ``replaceSegments`` for one cleaned segment (see the module doc for the
        crash-safe order)."""
        dir_path = lg.dir
        paths = _paths(dir_path, c.base_offset)
        try:
            for suffix in _INDEX_SUFFIXES:
                os.replace(paths[suffix] + CLEANED_SUFFIX, paths[suffix] + SWAP_SUFFIX)
            os.replace(paths[LOG_SUFFIX] + CLEANED_SUFFIX, paths[LOG_SUFFIX] + SWAP_SUFFIX)
        except BaseException:
            if not os.path.exists(paths[LOG_SUFFIX] + SWAP_SUFFIX):
                delete_cleaned_files(dir_path, c.base_offset)
            raise
        fsync_dir(dir_path)                      # commit point: <base>.log.swap exists
        old = [info.segment for info in c.old]
        for seg in old:
            if seg.base_offset == c.base_offset:
                seg.close()                      # its files are replaced below
            else:
                seg.delete()
        for suffix in _INDEX_SUFFIXES:
            os.replace(paths[suffix] + SWAP_SUFFIX, paths[suffix])
        os.replace(paths[LOG_SUFFIX] + SWAP_SUFFIX, paths[LOG_SUFFIX])
        fsync_dir(dir_path)
        if c.aborted == 0:
            _unlink(paths[TXN_INDEX_SUFFIX])     # like Kafka, no .txnindex without entries
        new = LogSegment(dir_path, c.base_offset, **lg._segment_kwargs())
        new.load_indexes()
        new.on_become_inactive()
        lg.replace_segments(new, old)

    def _write_checkpoint(self, lg) -> None:
        d = self.log_manager.log_dir_of(lg.topic, lg.partition) if hasattr(self.log_manager, "log_dir_of") else None
        if d is None:
            return
        live = {(l.topic, l.partition) for l in self.log_manager.logs()
                if self.log_manager.log_dir_of(l.topic, l.partition) == d}
        entries = {tp: off for tp, off in self.checkpoints.items() if tp in live}
        try:
            OffsetCheckpointFile(os.path.join(d, CLEANER_OFFSET_CHECKPOINT)).write(entries)
        except OSError as e:
            log.error("Cannot write the cleaner checkpoint in %s: %s", d, e)

