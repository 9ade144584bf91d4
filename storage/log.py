"""A partition's log: ordered segments, offsets, recovery, retention (Kafka's ``UnifiedLog``).

Directory ``<log.dir>/<topic>-<partition>/`` holds ``<20-digit base>.log``,
``.index``, ``.timeindex`` and (once a transaction aborts in it) ``.txnindex``
per segment, producer state snapshots ``<offset>.snapshot``, plus
``partition.metadata`` and ``leader-epoch-checkpoint`` (storage.leader_epoch).

Producer state (idempotence, transactions, LSO) lives in
:class:`minikafka.storage.producer_state.ProducerStateManager`; this class drives it:
validation before the write, update after, snapshots on roll and close, and
rebuild (latest snapshot + replay of the log tail) on load and truncation.

Single-threaded by design (the broker owns each log from one trio task);
:meth:`UnifiedLog.flush` alone may run in a worker thread concurrently.

Flushing (fsync) is Kafka's: nothing is fsynced per write by default (an
acknowledged append is in the page cache, which survives a process crash).
``flush.messages`` asks for an fsync once that many messages are past the
recovery point, ``flush.ms`` (checked by the broker's log flusher) once that
long has passed since the last fsync, and every roll asks for the finished
segment to be fsynced. The log only *asks* (``on_flush_needed``: the LogManager
collects the asks); the broker runs :meth:`UnifiedLog.flush` in a worker thread, and a produce waits for it
when its own append asked (``AppendResult.flush_needed``), as Kafka flushes
before it answers. A flush advances the recovery point: recovery after an
unclean shutdown rescans only the segments from the one holding it.
"""
from __future__ import annotations

import logging
import os
import re
import struct
import threading
import time
from bisect import bisect_right
from typing import Callable, NamedTuple

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.checkpoint import fsync_path, read_partition_metadata, write_partition_metadata
from minikafka.storage.file_slice import FileSlice
from minikafka.storage.config import LogConfig
from minikafka.storage.index import CorruptIndexError
from minikafka.storage.leader_epoch import LeaderEpochFileCache
from minikafka.storage.producer_state import DuplicateBatch, ProducerStateManager, parse_marker, snapshot_path
from minikafka.storage.transaction_index import AbortedTxn
from minikafka.protocol.record_walk import run as run_steps
from minikafka.storage.validator import Analysis, analyze_append
from minikafka.storage.segment import (CLEANED_SUFFIX, DELETED_SUFFIX, END_OF_SEGMENT, INDEX_SUFFIX, LOG_SUFFIX,
                                       SNAPSHOT_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, LogSegment)

log = logging.getLogger("minikafka.storage")

_SEGMENT_FILE = re.compile(r"^(\d{20})(\.[a-z]+)$")
_TMP_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, ".tmp")
_LOG_SWAP = LOG_SUFFIX + SWAP_SUFFIX  # a cleaner swap a crash interrupted
# a batch's first bytes, up to its magic: baseOffset, batchLength, partitionLeaderEpoch (outside the CRC)
_PATCHED_HEAD = rec.MAGIC_OFFSET
# append errors Kafka answers without the log start offset (its appendToLocalLog catches these
# apart from the rest)
NO_LOG_START_OFFSET = frozenset((ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE,
                                 ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.KAFKA_STORAGE_ERROR))


class FlushStats:
    """Kafka's ``LogFlushStats`` (LogFlushRateAndTimeMs): fsync passes of all logs and their time."""

    def __init__(self):
        self._lock = threading.Lock()
        self.count = 0
        self.seconds = 0.0

    def record(self, seconds: float) -> None:
        with self._lock:
            self.count += 1
            self.seconds += seconds


FLUSH_STATS = FlushStats()


class AppendResult(NamedTuple):
    base_offset: int           # offset assigned to the first record
    last_offset: int           # offset of the last record
    log_append_time_ms: int    # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    num_records: int
    flush_needed: bool = False  # flush.messages reached: fsync before answering (Kafka flushes in append)


class PendingAppend:
    """An append whose offsets are assigned and whose bytes are still to be written
    (:meth:`UnifiedLog.begin_append`). Once :meth:`share` was called, :meth:`write` may run in a
    worker thread; it runs once, in whichever thread calls it first (the worker, or the log's
    owner when something else must change the log first: :meth:`UnifiedLog.finish_append`
    completes it, waiting for a write under way)."""

    __slots__ = ("log", "segment", "parts", "size", "meta", "first_offset", "next_offset", "num_records",
                 "prepared", "log_append_time_ms", "error", "result", "_lock", "_written")

    def __init__(self, log: "UnifiedLog", segment: LogSegment, parts: list, size: int, meta: list,
                 first_offset: int, next_offset: int, num_records: int, prepared, log_append_time_ms: int):
        self.log, self.segment, self.parts, self.size, self.meta = log, segment, parts, size, meta
        self.first_offset, self.next_offset, self.num_records = first_offset, next_offset, num_records
        self.prepared, self.log_append_time_ms = prepared, log_append_time_ms
        self.error: Exception | None = None
        self.result: AppendResult | None = None
        self._lock: threading.Lock | None = None  # made by share (an append written in one step needs none)
        self._written = False

    def share(self) -> None:
        """Before :meth:`write` is handed to another thread."""
        self._lock = threading.Lock()

    def write(self) -> None:
        """Write the bytes to the segment file, once (after :meth:`share`, a second call from
        another thread waits for the first)."""
        if self._lock is None:
            self._write()
        else:
            with self._lock:
                self._write()

    def _write(self) -> None:
        if self._written:
            return
        self._written = True
        try:
            self.segment.write(self.parts, self.size)
        except Exception as e:
            self.error = e
        self.parts = None  # (the records are not needed any more)


class ReadResult(NamedTuple):
    """What a fetch reads from one partition (Kafka's ``FetchDataInfo`` with the log's offsets)."""
    slice: FileSlice | None    # a slice of one segment file: whole batches, possibly a cut one at the
                               # end; sent from the file as it is (None: no records)
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int
    log_end_offset: int
    fetch_offset: int
    aborted: list | None = None  # with include_aborted: [(producer_id, first_offset)] (Kafka's
                                 # abortedTransactions; None where Kafka has none to give)
    first_entry_incomplete: bool = False  # without min_one, the size limit cut the first batch:
                                          # Kafka's fetch then answers no records (and no list)

    @property
    def records(self) -> bytes:
        """The slice's bytes, read now (the fetch path sends the slice without reading it)."""
        return self.slice.read() if self.slice is not None else b""

    @property
    def next_offset(self) -> int:
        """Offset after the last whole batch returned (the fetch offset if none): where a
        reader continues. Walks the batch headers; the fetch path never needs it."""
        nxt = self.fetch_offset
        for _, h in rec.iter_batch_headers(self.records):
            nxt = max(nxt, h.next_offset)
        return nxt


def parse_topic_partition_name(name: str) -> tuple[str, int] | None:
    """``"my-topic-3"`` -> ``("my-topic", 3)``; None if the name is not ``<topic>-<int>``."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


class UnifiedLog:
    """One partition's log on disk."""

    def __init__(self, dir_path: str, topic: str, partition: int, config: LogConfig, *,
                 topic_id=None, log_start_offset: int = 0, recovery_point: int = 0,
                 had_clean_shutdown: bool = True):
        self.dir = dir_path
        self.topic = topic
        self.partition = partition
        self.name = f"{topic}-{partition}"  # (in every append's error messages: made once)
        self.config = config
        self.topic_id = topic_id
        self.on_append: Callable[[], None] | None = None  # after each append (the LogManager counts them)
        self._batch_base_cache: tuple | None = None  # (key, value) of _batch_base_at
        # asks for an fsync up to an offset (exclusive) in a worker thread: on roll (the finished
        # segment) and when flush.messages is reached. None: flush.messages flushes in append
        self.on_flush_needed: Callable[["UnifiedLog", int], None] | None = None
        # called (with the log) when the log start offset advances, so it can be checkpointed
        self.on_log_start_offset_change: Callable[["UnifiedLog"], None] | None = None
        self.producer_state = ProducerStateManager(dir_path, topic, partition, snapshots=[])  # listed by _load
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._last_flush_ms = int(time.time() * 1000)
        self._flush_lock = threading.Lock()  # one fsync pass at a time; the recovery point only grows
        self._closed = False
        self._pending: PendingAppend | None = None  # an append begun and not finished (begin_append)
        try:
            os.mkdir(dir_path)
        except FileExistsError:
            pass  # loading an existing log (the usual case: no makedirs walk)
        except FileNotFoundError:
            os.makedirs(dir_path, exist_ok=True)
        if topic_id is not None:
            stored = read_partition_metadata(dir_path)
            if stored != topic_id:
                if stored is not None:
                    log.warning("Partition %s-%d: partition.metadata topic id %s differs from %s; rewriting",
                                topic, partition, stored, topic_id)
                write_partition_metadata(dir_path, topic_id)
        else:
            self.topic_id = read_partition_metadata(dir_path)
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.leader_epoch_cache = LeaderEpochFileCache(dir_path)
        self._load(had_clean_shutdown)
        # the epoch stamped on appended batches: the cache's latest once loaded; the log manager
        # moves it on with become_leader on every start
        self.leader_epoch = self.leader_epoch_cache.latest_epoch or 0

    # ------------------------------------------------------------------ properties
    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def closed(self) -> bool:
        """Closed: the broker shut down, the partition was deleted, or its replica was replaced
        by one in another log dir."""
        return self._closed

    @property
    def log_end_offset(self) -> int:
        return self.next_offset

    @property
    def last_stable_offset(self) -> int:
        if not self.producer_state.ongoing_txns:
            return self.high_watermark  # (no open transaction: read for every partition of a Fetch)
        fuo = self.producer_state.first_unstable_offset()
        if fuo is not None and fuo < self.log_start_offset:
            # Kafka's maybeIncrementFirstUnstableOffset: an open transaction whose start was deleted
            # (DeleteRecords, retention) is unstable from the log start offset, as Kafka's offset
            # metadata gives it: the base offset of the batch holding it (below the log start if
            # DeleteRecords cut a batch), the log end offset if there is none
            fuo = self._batch_base_at(self.log_start_offset)
        if fuo is not None and fuo < self.high_watermark:
            return fuo
        return self.high_watermark

    def batch_base_at(self, offset: int) -> int:
        """Base offset of the first batch whose last offset >= ``offset`` (the log end offset if none)."""
        return self._batch_base_at(offset)

    def _batch_base_at(self, offset: int) -> int:
        """Kafka's ``convertToOffsetMetadataOrThrow(offset).messageOffset``: base offset of the
        first batch whose last offset >= ``offset``, else the log end offset (cached per log
        start and end offset: called for every LSO while a transaction's start is deleted)."""
        key = (offset, self.next_offset, len(self.segments))
        cached = self._batch_base_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        base = self.next_offset
        i = max(bisect_right(self._bases, offset) - 1, 0)
        for seg in self.segments[i:]:
            bp = seg.translate_offset(offset)
            if bp is not None:
                base = bp.header.base_offset
                break
        self._batch_base_cache = (key, base)
        return base

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    def num_segments(self) -> int:
        return len(self.segments)

    def _segment_kwargs(self) -> dict:
        c = self.config
        return dict(index_interval_bytes=c.index_interval_bytes, max_index_entries=c.max_index_entries,
                    max_time_index_entries=c.max_time_index_entries)

    # ------------------------------------------------------------------ loading / recovery
    def _load(self, had_clean_shutdown: bool) -> None:
        """Open the segments, recovering what may be damaged (Kafka's ``LogLoader``).

        What is read depends on what can be trusted. After a clean shutdown: the active
        segment's tail, from its last offset index entry (where its log end offset is found).
        After an unclean one: everything from the recovery point on, that is from the last
        index entry at or below it in its segment, and every later segment whole. Other
        segments are opened without reading anything: their indexes are read on first use."""
        bases = []
        present: dict[int, set[str]] = {}
        snapshots = []
        # a cleaner swap interrupted after its commit point is completed; its segments are re-validated
        names = os.listdir(self.dir)
        swapped = set()
        if any(n.endswith(_LOG_SWAP) for n in names):
            from minikafka.storage.cleaner import complete_interrupted_swaps  # (compaction's, rarely needed)
            swapped = set(complete_interrupted_swaps(self.dir, names))
            names = os.listdir(self.dir)
        for fname in names:
            if fname.endswith(_TMP_SUFFIXES) or fname.endswith(SWAP_SUFFIX):
                path = os.path.join(self.dir, fname)
                log.warning("Deleting stray file %s", path)
                _unlink(path)
                continue
            m = _SEGMENT_FILE.match(fname)
            if not m:
                continue
            base, suffix = int(m.group(1)), m.group(2)
            if suffix == SNAPSHOT_SUFFIX:
                snapshots.append(base)
                continue
            present.setdefault(base, set()).add(suffix)
            if suffix == LOG_SUFFIX:
                bases.append(base)
        for base, suffixes in present.items():
            if LOG_SUFFIX not in suffixes:
                for suffix in suffixes & {INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX}:
                    path = os.path.join(self.dir, f"{base:020d}{suffix}")
                    log.warning("Deleting orphaned index file %s (no matching log file)", path)
                    _unlink(path)
        bases.sort()
        kw = self._segment_kwargs()
        segments = [LogSegment(self.dir, b, **kw) for b in bases]
        recovered: list[LogSegment] = []  # segments scanned batch by batch (their epochs are re-read)

        if segments:
            # segments that may hold unflushed data after an unclean shutdown: from the one holding the
            # recovery point onward (Kafka's "unflushed" segments); within that one, from the recovery point
            if had_clean_shutdown:
                first_unflushed, trusted_below = len(segments) - 1, END_OF_SEGMENT
            else:
                first_unflushed = max(0, bisect_right(bases, self.recovery_point) - 1)
                trusted_below = self.recovery_point
            i = 0
            while i < len(segments):
                seg = segments[i]
                is_last = i == len(segments) - 1
                truncated = 0
                missing = [s for s in (INDEX_SUFFIX, TIME_INDEX_SUFFIX) if s not in present[seg.base_offset]]
                if seg.base_offset in swapped:
                    truncated = seg.recover()
                    recovered.append(seg)
                elif missing:
                    log.warning("Rebuilding index files for %s (missing: %s)", seg.log_path,
                                ", ".join(seg.log_path[:-len(LOG_SUFFIX)] + s for s in missing))
                    truncated = seg.recover(rebuild=True)
                    recovered.append(seg)
                elif i < first_unflushed:
                    seg.defer_indexes()  # trusted: nothing read now
                elif i == first_unflushed:
                    if is_last:
                        seg.open_for_append()  # (the scan reads through the log's own descriptor)
                    if not had_clean_shutdown:
                        # Kafka's line; the scan starts at the recovery point's batch, not at position 0
                        log.info("Recovering unflushed segment %d. %d/%d recovered for %s.", seg.base_offset,
                                 0, len(segments) - first_unflushed, self.name)
                    try:
                        seg.load_indexes()
                    except CorruptIndexError as e:
                        log.warning("Rebuilding index files for %s: %s", seg.log_path, e)
                        truncated = seg.recover(rebuild=True)
                    else:
                        truncated = seg.recover(from_offset=trusted_below)
                    recovered.append(seg)
                else:
                    log.info("Recovering unflushed segment %d. %d/%d recovered for %s.", seg.base_offset,
                             i - first_unflushed, len(segments) - first_unflushed, self.name)
                    truncated = seg.recover()
                    recovered.append(seg)
                if not is_last and seg in recovered:
                    seg.on_become_inactive()
                if truncated and not is_last:
                    # like Kafka: data after a corrupt batch in a non-final segment is not trusted
                    for later in segments[i + 1:]:
                        log.warning("Deleting segment %s after corruption in an earlier segment", later.log_path)
                        later.delete()
                    del segments[i + 1:]
                    seg.open_for_append()
                    break
                i += 1
        self.segments = segments
        self._bases = [s.base_offset for s in segments]
        if not self.segments:
            self._add_segment(self.log_start_offset)
        self.active_segment.open_for_append()
        self.next_offset = self.active_segment.next_offset
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        if self.log_start_offset > self.next_offset:
            log.warning("Partition %s: log start offset %d is beyond the log end offset %d; starting the log "
                        "afresh at %d", self.name, self.log_start_offset, self.next_offset, self.log_start_offset)
            self._truncate_fully_and_start_at(self.log_start_offset)
        self.high_watermark = self.next_offset
        self.recovery_point = min(self.recovery_point, self.next_offset)
        # aborted-txn entries for markers beyond a truncated tail must go
        if TXN_INDEX_SUFFIX in present.get(self.active_segment.base_offset, ()):
            self.active_segment.txn_index.truncate_to(self.next_offset)
        self._load_leader_epochs(recovered)
        self._rebuild_producer_state(sorted(snapshots))

    def _load_leader_epochs(self, recovered: list[LogSegment]) -> None:
        """Kafka's LogLoader: the epochs stamped on recovered batches are added to the cache
        (all batches when the checkpoint file is missing or unreadable), then the cache is
        cut to the recovered log: entries at or beyond the log end offset (a torn tail, or
        an epoch in which nothing was written) and before the log start offset go."""
        cache = self.leader_epoch_cache
        found = []
        if cache.loaded_from_file:
            scanned = [seg.scan_epochs for seg in recovered if seg in self.segments]
        else:
            scanned = [[(bp.header.partition_leader_epoch, bp.header.base_offset) for bp in seg.iter_batches()]
                       for seg in self.segments]
        for epochs in scanned:
            for epoch, base in epochs:
                latest = found[-1][0] if found else cache.latest_epoch
                if epoch >= 0 and (latest is None or epoch > latest):
                    found.append((epoch, base))
        if found:
            log.info("Partition %s: leader epochs from the log's batches: %s", self.name, found)
            cache.assign_all(found)
        # in memory only (the next load cuts the file's entries again); become_leader writes it
        cache.truncate_from_end(self.next_offset, write=False)
        cache.truncate_from_start(self.log_start_offset, write=False)

    def become_leader(self, epoch: int, write: bool = True) -> None:
        """This broker leads the partition from now on in ``epoch`` (Kafka's ``makeLeader``):
        appended batches carry it and it starts at the log end offset in the epoch cache
        (whose file, with ``write=False``, is written before the epoch's first batch)."""
        self._settle()
        self.leader_epoch = epoch
        self.leader_epoch_cache.assign(epoch, self.next_offset, write)

    def leader_epoch_of_offset(self, offset: int) -> int:
        """The partition leader epoch stamped on the batch holding ``offset`` (-1 if none)."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            return -1
        bp = self.segments[i].translate_offset(offset)
        return bp.header.partition_leader_epoch if bp is not None and bp.header.partition_leader_epoch >= 0 else -1

    def _add_segment(self, base_offset: int) -> LogSegment:
        seg = LogSegment(self.dir, base_offset, create=True, **self._segment_kwargs())
        self.segments.append(seg)
        self._bases.append(base_offset)
        return seg

    def _truncate_fully_and_start_at(self, offset: int) -> None:
        for seg in self.segments:
            seg.delete()
        self.segments = []
        self._bases = []
        self._add_segment(offset)
        self.next_offset = offset
        self.high_watermark = offset
        self.recovery_point = offset
        self.log_start_offset = offset
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(offset)

    # ------------------------------------------------------------------ append
    def analyze(self, records, *, now_ms: int | None = None, origin: str = "client"):
        """The validation of an append of ``records`` (storage/validator.py: Kafka's checks
        before offsets are assigned, every record read), as a generator of bounded steps whose
        value is the :class:`Analysis` to hand to :meth:`append`. Reads only the records and
        this log's config: it may run long before the append, over many turns of an event loop."""
        if origin not in ("client", "coordinator"):
            raise ValueError(f"unknown append origin {origin!r}")
        if now_ms is None:
            now_ms = int(time.time() * 1000)
        return analyze_append(records, self.config, now_ms, self.name, origin == "client")

    def append(self, records, *, now_ms: int | None = None, origin: str = "client",
               analysis: Analysis | None = None) -> AppendResult:
        """Validate, assign offsets and append one or more batches (all or nothing).

        ``origin`` is Kafka's ``AppendOrigin``: ``"client"`` (a produce request) or
        ``"coordinator"`` (markers, the coordinators' own records): control batches
        allowed, client-only checks skipped; offsets are still assigned. ``analysis`` is the
        finished :meth:`analyze` of these records (without it the validation runs here).
        """
        pending = self.begin_append(records, now_ms=now_ms, origin=origin, analysis=analysis)
        if pending.__class__ is AppendResult:
            return pending  # a duplicate
        return self.finish_append(pending)

    def begin_append(self, records, *, now_ms: int | None = None, origin: str = "client",
                     analysis: Analysis | None = None) -> PendingAppend | AppendResult:
        """:meth:`append` up to the write: every check, the offsets, the roll. Returns the
        :class:`PendingAppend` (its ``write`` may then run in a worker thread, and
        :meth:`finish_append` must follow it), or the AppendResult of a duplicate batch. Until
        it is finished, nothing of the append shows (log end offset, high watermark, segment
        size, producer state), and whatever else changes this log finishes it first."""
        self._settle()
        if origin not in ("client", "coordinator"):
            raise ValueError(f"unknown append origin {origin!r}")
        is_from_client = origin == "client"
        if self._closed:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"Log {self.name} is closed")
        if analysis is None:
            analysis = run_steps(self.analyze(records, now_ms=now_ms, origin=origin))
        now_ms = analysis.now_ms
        config = self.config
        if analysis.error is not None:
            e = analysis.error
            # Produce answers the log start offset with a validation error (Kafka's processFailedRecord),
            # but not with a corrupt or oversized batch (ReplicaManager.appendToLocalLog lists those)
            if e.code not in NO_LOG_START_OFFSET:
                e.log_start_offset = self.log_start_offset
            raise e
        # The caller's records are read where they are and never changed (a Produce request's are
        # a read-only view of its frame): offsets and leader epochs, outside the CRC, go into a copy
        # of each batch's first 16 bytes, written in front of the rest of it (one writev). A batch
        # that must change inside its CRC (a max timestamp fixed, LogAppendTime) gets a copy of its
        # whole header instead (`heads`), its CRC that of the copy and the records behind it. A
        # megabyte batch reaches the file without a copy in Python. A rebuilt batch (`own`) is the
        # log's already: patched in place.
        buf = analysis.records
        batches = analysis.batches
        own = analysis.rebuilt
        log_append = config.message_timestamp_type == "LogAppendTime"
        heads = {}
        if analysis.fixes or log_append:
            batches = list(batches)
            for i, ts, attributes in analysis.fixes:
                pos = batches[i][0]
                if own:
                    rec.set_create_time_max(buf, pos, ts, attributes)
                    batches[i] = (pos, rec.parse_header(buf, pos))
                else:
                    head = heads[i] = _header_copy(buf, pos)
                    rec.set_create_time_max(head, 0, ts, attributes)
                    batches[i] = (pos, rec.parse_header(head, 0))
            if log_append:
                for i, (pos, _) in enumerate(batches):
                    target, at = (buf, pos) if own else (heads.setdefault(i, _header_copy(buf, pos)), 0)
                    rec.set_log_append_time(target, at, now_ms)
            for i, head in heads.items():
                _seal(head, buf, batches[i][0])

        total = len(buf)
        if total > config.effective_segment_bytes:
            raise KafkaError(ErrorCode.RECORD_LIST_TOO_LARGE,
                             f"Message batch size is {total} bytes in append to partition {self.name} which exceeds "
                             f"the maximum configured segment size of {config.effective_segment_bytes}.")

        # ---- assign offsets (baseOffset and partitionLeaderEpoch are outside the CRC) ----
        first_offset = offset = self.next_offset
        meta = []
        num_records = 0
        max_ts = -1
        has_pid = False
        pack_offset = rec.patch_base_offset
        pack_epoch = rec.patch_partition_leader_epoch
        epoch = self.leader_epoch
        if own:
            parts = [buf]
        else:
            parts = []
            view = memoryview(buf)
        for i, (pos, h) in enumerate(batches):
            if own:
                pack_offset(buf, pos, offset)
                pack_epoch(buf, pos, epoch)
            else:
                head = heads.get(i) if heads else None
                if head is None:
                    head = bytearray(view[pos:pos + _PATCHED_HEAD])
                pack_offset(head, 0, offset)
                pack_epoch(head, 0, epoch)
                parts.append(head)
                parts.append(view[pos + len(head):pos + h.size])
            last = offset + h.last_offset_delta
            bts = now_ms if log_append else h.max_timestamp
            if bts > max_ts:
                max_ts = bts
            meta.append((pos, h.batch_length + 12, last, bts))
            num_records += h.records_count
            if h.producer_id >= 0:
                has_pid = True
            offset = last + 1

        # ---- producer state (idempotence / transactions): validate before the write ----
        prepared = None
        if has_pid:
            try:
                prepared = self.producer_state.analyze_append(buf, batches, meta, is_from_client)
            except KafkaError as e:
                e.log_start_offset = self.log_start_offset
                raise
            if prepared.__class__ is DuplicateBatch:
                return AppendResult(prepared.first_offset, prepared.last_offset, prepared.log_append_time_ms,
                                    self.log_start_offset, num_records)

        cache = self.leader_epoch_cache
        if cache.latest_epoch != epoch or cache.file_behind:
            # the current epoch's entry went with a truncation or was never made (Kafka's
            # maybeAssignEpochStartOffset), or the file lags the load's cuts: before the write
            cache.assign(epoch, first_offset)
        seg = self.active_segment
        if self._should_roll(seg, total, max_ts, offset - 1, now_ms):
            seg = self.roll(now_ms)
        seg.open_for_append()
        self._pending = PendingAppend(self, seg, parts, total, meta, first_offset, offset, num_records, prepared,
                                      now_ms if log_append else -1)
        return self._pending

    def finish_append(self, pending: PendingAppend) -> AppendResult:
        """The end of :meth:`begin_append`'s append, once its bytes are written (written here
        if they are not yet): the offsets, the high watermark and the producer state move.
        Again for an append finished already: the same result, or the same error."""
        if pending.result is not None:
            return pending.result
        pending.write()
        if self._pending is pending:
            self._pending = None
        if pending.error is not None:
            raise pending.error
        seg = pending.segment
        seg.appended(pending.size, pending.meta)
        offset = self.next_offset = pending.next_offset
        self.high_watermark = offset
        if pending.prepared is not None:
            # entries, ongoing transactions; aborted ones indexed in the segment holding the marker
            self.producer_state.apply_append(pending.prepared, seg.txn_index)
        config = self.config

        # Kafka's check: unflushed messages = log end offset - recovery point
        flush_needed = offset - self.recovery_point >= config.flush_messages
        if flush_needed:
            if self.on_flush_needed is not None:
                self.on_flush_needed(self, offset)
            else:
                self.flush()
                flush_needed = False
        if self.on_append is not None:
            self.on_append()
        pending.result = AppendResult(pending.first_offset, offset - 1, pending.log_append_time_ms,
                                      self.log_start_offset, pending.num_records, flush_needed)
        return pending.result

    def _settle(self) -> None:
        """Finish the append whose bytes may be being written in a worker thread before anything
        else changes this log (waiting for the write, holding the calling thread: the broker
        lets a large write end before it changes the log otherwise; this is the rule's guard)."""
        pending = self._pending
        if pending is not None:
            try:
                self.finish_append(pending)
            except Exception:
                pass  # the append's own caller gets the error from finish_append

    def append_as_follower(self, records, now_ms: int | None = None) -> int:
        """Append batches that already have their offsets and leader epochs, as they are in the
        log they are copied from (Kafka's ``appendAsFollower``, for a future replica: a partition
        moving to another log dir). The whole batches of ``records`` are appended (a trailing cut
        one is left for the next copy), each CRC-checked, at or after the log end offset (gaps, as
        compaction leaves, are kept); producer state, the aborted transactions' index and the
        leader epoch cache follow them as recovery rebuilds them. Returns the bytes appended.
        Called from a worker thread: nothing else touches a future replica meanwhile."""
        self._settle()
        if self._closed:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"Log {self.name} is closed")
        if now_ms is None:
            now_ms = int(time.time() * 1000)
        whole = list(rec.iter_batch_headers(records))
        if not whole:
            return 0
        end = whole[-1][0] + whole[-1][1].size
        batches = rec.validate_batches(records, 0, end)   # CRC and sizes of every batch
        if batches[0][1].base_offset < self.next_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"Out of order offsets in the copy to {self.name}: {batches[0][1].base_offset} is below "
                             f"the log end offset {self.next_offset}")
        view = memoryview(records)
        cache = self.leader_epoch_cache
        group: list[tuple[int, rec.BatchHeader]] = []

        def write(group) -> None:
            first = group[0][0]
            size = group[-1][0] + group[-1][1].size - first
            meta = [(pos - first, h.size, h.base_offset + h.last_offset_delta, h.max_timestamp) for pos, h in group]
            seg = self.active_segment
            seg.append([view[first:first + size]], size, meta)
            for pos, h in group:
                if h.producer_id >= 0:
                    marker = parse_marker(records, pos) if h.attributes & rec.CONTROL_FLAG else None
                    self.producer_state.replay_batch(h, marker, seg.txn_index)
            self.next_offset = meta[-1][2] + 1
            self.high_watermark = self.next_offset

        for pos, h in batches:
            epoch = h.partition_leader_epoch
            if epoch >= 0 and (cache.latest_epoch is None or epoch > cache.latest_epoch):
                if group:
                    write(group)
                    group = []
                cache.assign(epoch, h.base_offset)
                self.leader_epoch = epoch
            seg = self.active_segment
            pending = (group[-1][0] + group[-1][1].size - group[0][0]) if group else 0
            last = h.base_offset + h.last_offset_delta
            if self._should_roll(seg, pending + h.size, h.max_timestamp, last, now_ms) and (group or seg.size):
                if group:
                    write(group)
                    group = []
                if self.active_segment.size and self._should_roll(self.active_segment, h.size, h.max_timestamp,
                                                                  last, now_ms):
                    # the new segment starts at this batch's base offset (past any gap)
                    self.next_offset = h.base_offset
                    self.roll(now_ms)
            group.append((pos, h))
        if group:
            write(group)
        return end

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start empty at ``offset`` (a copy whose source's log start
        offset passed its end: Kafka's ``truncateFullyAndStartAt``)."""
        self._settle()
        self._truncate_fully_and_start_at(offset)

    def _should_roll(self, seg: LogSegment, size: int, max_ts: int, max_offset: int, now_ms: int) -> bool:
        """Kafka's ``LogSegment.shouldRoll``."""
        c = self.config
        if seg.size > c.effective_segment_bytes - size:
            return True
        if seg.size > 0 and seg.time_waited_for_roll(now_ms, max_ts) > c.segment_ms - c.segment_jitter_ms:
            return True
        if seg.offset_index.is_full or seg.time_index.is_full:
            return True
        return not seg.can_convert_to_relative_offset(max_offset)

    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (Kafka's ``roll``)."""
        self._settle()
        new_base = self.next_offset
        active = self.active_segment
        if active.base_offset == new_base:
            if active.size == 0:
                return active  # nothing to roll
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"Trying to roll a new log segment for {self.name} with start offset {new_base} "
                             f"which already exists")
        active.on_become_inactive()
        self.producer_state.take_snapshot(new_base)
        seg = self._add_segment(new_base)
        log.debug("Rolled new log segment %s at offset %d", self.name, new_base)
        if self.on_flush_needed is not None:
            # Kafka's roll: the finished segment (and the snapshot) are fsynced asynchronously and
            # the recovery point advanced to the new segment, so recovery need not rescan them
            self.on_flush_needed(self, new_base)
        return seg

    # ------------------------------------------------------------------ read
    def check_fetch_offset(self, fetch_offset: int) -> None:
        """OFFSET_OUT_OF_RANGE outside [log_start_offset, log_end_offset] (Kafka's LocalLog.read checks
        it first, whatever else the read would answer)."""
        if fetch_offset < self.log_start_offset or fetch_offset > self.next_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"Received request for offset {fetch_offset} for partition {self.name}, but we only "
                             f"have log segments in the range {self.log_start_offset} to {self.next_offset}.")

    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one: bool = True, include_aborted: bool = False) -> ReadResult:
        """What a fetch at ``fetch_offset`` gets (Kafka's ``UnifiedLog.read`` / ``LocalLog.read``):
        a slice of ONE segment file, from the batch holding ``fetch_offset`` (or the first batch
        after it, in the next segments if need be), of at most ``max_bytes``, never past
        ``max_offset``'s batch (exclusive; the broker passes the HW or the LSO; default HW).
        The slice is the file's bytes: it may end inside a batch when the size limit cuts one,
        and with ``min_one`` a first batch larger than ``max_bytes`` is returned whole (KIP-74).
        A reader continues with the next segment at its next fetch. OFFSET_OUT_OF_RANGE outside
        [log_start_offset, log_end_offset].

        ``include_aborted`` (read_committed) also lists the aborted transactions a consumer
        needs, as Kafka's ``addAbortedTransactions``: from ``fetch_offset`` up to a bound taken
        from the offset index of the segment read (the first entry at or after the end of the
        slice; else the next segment's base offset; else the log end offset), so the list may
        name transactions beyond the returned data.
        """
        self.check_fetch_offset(fetch_offset)
        leo = self.next_offset
        hw = self.high_watermark
        if max_offset is None:
            max_offset = hw
        lso = self.last_stable_offset
        if fetch_offset >= max_offset:
            return ReadResult(None, hw, self.log_start_offset, lso, leo, fetch_offset, [] if include_aborted else None)
        # where max_offset's batch sits: the readable part ends there (Kafka's maxOffsetMetadata)
        max_base, max_position = self._offset_position(max_offset)
        segments = self.segments
        i = max(bisect_right(self._bases, fetch_offset) - 1, 0)
        while i < len(segments):
            seg = segments[i]
            if seg.base_offset < max_base:
                limit = seg.size
            elif seg.base_offset == max_base:
                limit = max_position
            else:
                limit = None
            r = seg.read(fetch_offset, max_bytes, limit, min_one)
            if r is not None:
                aborted = self._aborted_for_read(fetch_offset, i, r) if include_aborted else None
                return ReadResult(r.records, hw, self.log_start_offset, lso, leo, fetch_offset, aborted,
                                  r.first_entry_incomplete)
            i += 1  # nothing at or after fetch_offset in this segment
        # every batch from fetch_offset on is gone (Kafka: empty, without aborted transactions)
        return ReadResult(None, hw, self.log_start_offset, lso, leo, fetch_offset)

    def _offset_position(self, offset: int) -> tuple[int, int]:
        """(segment base offset, file position) of the batch holding ``offset``, or of the
        first batch after it; the log end's if none (Kafka's ``convertToOffsetMetadataOrThrow``)."""
        active = self.active_segment
        if offset < self.next_offset:
            i = max(bisect_right(self._bases, offset) - 1, 0)
            for seg in self.segments[i:]:
                bp = seg.translate_offset(offset)
                if bp is not None:
                    return seg.base_offset, bp.position
        return active.base_offset, active.size

    def _aborted_for_read(self, fetch_offset: int, seg_index: int, r) -> list[tuple[int, int]]:
        """Kafka's ``addAbortedTransactions`` for a read of segment ``seg_index``."""
        segments = self.segments
        bound = segments[seg_index].offset_index.fetch_upper_bound_offset(
            r.position + (len(r.records) if r.records is not None else 0))
        if bound is None:
            bound = segments[seg_index + 1].base_offset if seg_index + 1 < len(segments) else self.next_offset
        return [(t.producer_id, t.first_offset)
                for t in self.collect_aborted_txns(fetch_offset, bound, start_segment=seg_index)]

    # ------------------------------------------------------------------ transactions (producer state)
    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[tuple[int, int]]:
        """``[(producer_id, first_offset)]`` of aborted transactions overlapping
        ``[fetch_offset, upper_bound_offset)`` for read_committed fetches."""
        return [(t.producer_id, t.first_offset) for t in self.collect_aborted_txns(fetch_offset, upper_bound_offset)]

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int,
                             start_segment: int | None = None) -> list[AbortedTxn]:
        """Kafka's ``collectAbortedTransactions``: every aborted transaction with
        ``last_offset >= fetch_offset`` and ``first_offset < upper_bound_offset``. A
        transaction is indexed in the segment holding its marker, which is at or after
        the segment holding ``fetch_offset`` if the marker is >= ``fetch_offset``; the
        scan starts there (or at ``start_segment``, the segment a fetch read) and stops at
        the first entry whose LSO reaches the upper bound."""
        out: list[AbortedTxn] = []
        segments = self.segments
        if start_segment is not None:
            i = start_segment
        else:
            i = max(bisect_right(self._bases, fetch_offset) - 1, 0)
        while i < len(segments):
            if segments[i].txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset, out):
                break
            i += 1
        return out

    def active_producers(self) -> list:
        """Producer state entries (DescribeProducers): ``producer_id``, ``producer_epoch``,
        ``last_sequence``, ``last_timestamp``, ``coordinator_epoch``, ``current_txn_first_offset``."""
        return self.producer_state.active_producers()

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        """Whether ``producer_id`` has an open transaction on this partition (of
        ``producer_epoch``, if given; O(1))."""
        return self.producer_state.has_ongoing_transaction(producer_id, producer_epoch)

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """``producer.id.expiration.ms``: drop idle producers without an open transaction."""
        self._settle()
        return self.producer_state.remove_expired_producers(now_ms, expiration_ms)

    def _rebuild_producer_state(self, snapshots: list[int] | None = None) -> None:
        """Reload producer state: the latest valid snapshot at or below the log end offset,
        then replay the batches from there to the LEO (Kafka's ``rebuildProducerState``).
        Aborted-transaction index entries of replayed markers are re-added if missing.
        ``snapshots``: the offsets of the snapshot files, if the caller listed the directory."""
        ps = self.producer_state
        leo = self.next_offset
        snap = ps.truncate_and_reload(self.log_start_offset, leo, snapshots)
        # no snapshot: replay everything (Kafka skips the scan after a clean shutdown, assuming
        # an upgrade; we write a snapshot on every close and roll, so a missing one means a
        # log that was never closed cleanly nor rolled: the scan is one segment)
        start = self.log_start_offset if snap is None else max(snap, self.log_start_offset)
        if start < leo:
            self._replay_producer_state(start, leo)
        if snap is not None and snap < self.log_start_offset:
            ps.on_log_start_offset_incremented(self.log_start_offset, leo)

    def _replay_producer_state(self, start: int, end: int) -> None:
        ps = self.producer_state
        segments = self.segments
        i = max(0, bisect_right(self._bases, start) - 1)
        n = 0
        for seg in segments[i:]:
            if seg.base_offset >= end:
                break
            first = seg.translate_offset(start) if seg.base_offset < start else None
            pos = first.position if first is not None else 0
            if seg.base_offset < start and first is None:
                continue
            for bp in seg.iter_batches(pos):
                h = bp.header
                if h.base_offset >= end:
                    break
                if h.producer_id < 0 or h.base_offset + h.last_offset_delta < start:
                    continue
                marker = None
                if h.attributes & rec.CONTROL_FLAG:
                    try:
                        marker = parse_marker(seg.pread(h.batch_length + 12, bp.position))
                    except KafkaError as e:
                        log.warning("Partition %s: unreadable control batch at offset %d: %s",
                                    self.name, h.base_offset, e)
                        continue
                ps.replay_batch(h, marker, seg.txn_index)
                n += 1
        log.debug("Partition %s: replayed %d producer batches from offset %d to %d", self.name, n, start, end)

    # ------------------------------------------------------------------ timestamps
    def fetch_offset_by_timestamp(self, ts_ms: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``ts_ms`` (at or
        after the log start offset), or None (ListOffsets then answers the LEO)."""
        return run_steps(self.offset_by_timestamp_steps(ts_ms))

    def offset_by_timestamp_steps(self, ts_ms: int):
        """:meth:`fetch_offset_by_timestamp` as a generator of record-walk steps (a stored batch
        may inflate to a gigabyte: the broker runs it in slices of its event loop). A segment
        deleted while it was read held records below the new log start offset: skipped."""
        start = self.log_start_offset
        for seg in list(self.segments):
            if seg.max_timestamp_so_far >= ts_ms:
                if seg is not self.active_segment and self._segment_end(seg) <= start:
                    continue
                try:
                    r = yield from seg.find_offset_by_timestamp(ts_ms, start)
                except OSError:
                    if seg in self.segments:
                        raise
                    continue
                if r is not None:
                    return r
        return None

    def max_timestamp_and_offset(self) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record with the largest timestamp (ListOffsets -3)."""
        return run_steps(self.max_timestamp_steps())

    def max_timestamp_steps(self):
        """:meth:`max_timestamp_and_offset` as a generator of record-walk steps."""
        # the first segment with the largest max timestamp (Kafka's Stream.max keeps the first of equals)
        return (yield from max(self.segments, key=_max_timestamp).find_max_timestamp_offset())

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: ``(epoch, end offset)`` from the leader epoch cache, (-1, -1)
        when unknown (Kafka's ``UnifiedLog.endOffsetForEpoch``)."""
        found = self.leader_epoch_cache.end_offset_for(epoch, self.next_offset)
        return (-1, -1) if found[1] == -1 else found

    def earliest_leader_epoch(self) -> int:
        """ListOffsets EARLIEST: the first cached epoch if it covers the log start offset, else -1."""
        first = self.leader_epoch_cache.earliest_entry()
        return first[0] if first is not None and first[1] <= self.log_start_offset else -1

    def replace_segments(self, new_segment: LogSegment, old_segments: list[LogSegment]) -> None:
        """Put ``new_segment`` where the adjacent ``old_segments`` were (in memory only: the
        cleaner has already swapped the files; Kafka's ``replaceSegments``)."""
        self._settle()
        dead = {id(s) for s in old_segments}
        at = next(i for i, s in enumerate(self.segments) if id(s) in dead)
        rest = [s for s in self.segments if id(s) not in dead]
        rest.insert(at, new_segment)
        self.segments = rest
        self._bases = [s.base_offset for s in rest]

    def _segment_end(self, seg: LogSegment) -> int:
        """Offset after the last offset held by ``seg`` (next segment's base, or LEO)."""
        i = bisect_right(self._bases, seg.base_offset)
        return self._bases[i] if i < len(self._bases) else self.next_offset

    # ------------------------------------------------------------------ retention
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: advance the log start offset to ``offset`` (persisted through
        ``on_log_start_offset_change``) and delete whole segments below it.
        OFFSET_OUT_OF_RANGE if ``offset`` > high watermark. Returns the new log start offset."""
        self._settle()
        if offset > self.high_watermark:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"Cannot increment the log start offset to {offset} of partition {self.name} "
                             f"since it is larger than the high watermark {self.high_watermark}")
        if offset < 0:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"Invalid offset {offset} for DeleteRecords")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.producer_state.on_log_start_offset_incremented(offset, self.next_offset)
            self._delete_log_start_offset_breached_segments()
            self._log_start_offset_changed()
        return self.log_start_offset

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Retention (Kafka's ``deleteOldSegments``): by log start offset always; by
        retention.bytes and retention.ms when cleanup.policy includes delete.
        Returns the number of segments deleted."""
        self._settle()
        if now_ms is None:
            now_ms = int(time.time() * 1000)
        n = self._delete_log_start_offset_breached_segments()
        if self.config.delete_enabled:
            n += self._delete_retention_size_breached_segments()
            n += self._delete_retention_ms_breached_segments(now_ms)
        return n

    def _delete_log_start_offset_breached_segments(self) -> int:
        start = self.log_start_offset
        return self._delete_segments(self._deletable(lambda seg, nxt: nxt is not None and nxt.base_offset <= start))

    def _delete_retention_size_breached_segments(self) -> int:
        retention = self.config.retention_bytes
        size = self.size
        if retention < 0 or size < retention:
            return 0
        diff = [size - retention]

        def should_delete(seg, nxt):
            if diff[0] - seg.size >= 0:
                diff[0] -= seg.size
                return True
            return False
        return self._delete_segments(self._deletable(should_delete))

    def _delete_retention_ms_breached_segments(self, now_ms: int) -> int:
        retention = self.config.retention_ms
        if retention < 0:
            return 0
        return self._delete_segments(self._deletable(lambda seg, nxt: now_ms - seg.largest_timestamp > retention))

    def _deletable(self, predicate) -> list[LogSegment]:
        """Oldest-first run of segments satisfying ``predicate`` (Kafka's ``deletableSegments``):
        never beyond the high watermark, never an empty active segment."""
        out = []
        segs = self.segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else self.next_offset
            is_last_and_empty = nxt is None and seg.size == 0
            if self.high_watermark >= upper and not is_last_and_empty and predicate(seg, nxt):
                out.append(seg)
            else:
                break
        return out

    def _delete_segments(self, deletable: list[LogSegment]) -> int:
        if not deletable:
            return 0
        if len(deletable) == len(self.segments):
            # always keep one segment: roll an empty one first (Kafka does the same)
            new_seg = self.roll()
            if deletable[-1] is new_seg:
                deletable = deletable[:-1]
        for seg in deletable:
            log.info("Deleting segment %s of %s (retention)", seg.base_offset, self.name)
            seg.delete()
        dead = {id(s) for s in deletable}
        self.segments = [s for s in self.segments if id(s) not in dead]
        self._bases = [s.base_offset for s in self.segments]
        if self.segments[0].base_offset > self.log_start_offset:
            self.log_start_offset = self.segments[0].base_offset
            self.producer_state.on_log_start_offset_incremented(self.log_start_offset, self.next_offset)
            self._log_start_offset_changed()
        return len(deletable)

    def _log_start_offset_changed(self) -> None:
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        if self.on_log_start_offset_change is not None:
            self.on_log_start_offset_change(self)

    def truncate_to(self, offset: int) -> None:
        """Remove everything at and after ``offset`` (whole batches; Kafka's ``truncateTo``)."""
        self._settle()
        if offset >= self.next_offset:
            return
        if offset <= self.segments[0].base_offset:
            self._truncate_fully_and_start_at(max(offset, self.log_start_offset))
            return
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
            self._bases.pop()
        active = self.active_segment
        active.truncate_to(offset)
        active.open_for_append()
        self.next_offset = active.next_offset
        self.leader_epoch_cache.truncate_from_end(self.next_offset)
        self.high_watermark = min(self.high_watermark, self.next_offset)
        self.recovery_point = min(self.recovery_point, self.next_offset)
        self._rebuild_producer_state()

    # ------------------------------------------------------------------ flush / close
    @property
    def unflushed_messages(self) -> int:
        """Kafka's ``unflushedMessages``: offsets past the recovery point."""
        return self.next_offset - self.recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    def flush(self, data_only: bool = False, upto: int | None = None) -> None:
        """fsync what lies between the recovery point and ``upto`` (default: the log end
        offset), then advance the recovery point to it. Safe to run in a worker thread while
        the owner keeps appending; concurrent calls take turns, and a call finding its range
        already flushed returns at once. With ``data_only`` the index files are not synced
        (recovery rebuilds them from the data), which is what a latency-sensitive commit
        point needs."""
        with self._flush_lock:
            if self._closed:
                return  # replaced (moved to another log dir) or deleted: nothing left to make durable
            end = self.next_offset if upto is None else min(upto, self.next_offset)
            if end <= self.recovery_point:
                return
            t0 = time.monotonic()
            # the epoch cache first: no epoch of data made durable is missing from its file
            self.leader_epoch_cache.flush()
            segments = list(self.segments)
            bases = [s.base_offset for s in segments]
            start = max(0, bisect_right(bases, self.recovery_point) - 1)
            for seg in segments[start:]:
                if seg.base_offset >= end:
                    break
                seg.flush(data_only)
            snap = self.producer_state.latest_snapshot_offset()
            if snap is not None and self.recovery_point < snap <= end:
                fsync_path(snapshot_path(self.dir, snap))
            self.recovery_point = end
            self._last_flush_ms = int(time.time() * 1000)
            FLUSH_STATS.record(time.monotonic() - t0)

    def flush_due(self, now_ms: int) -> bool:
        """``flush.ms`` has passed since the last flush and something is unflushed (Kafka's
        log flusher checks this every ``log.flush.scheduler.interval.ms``)."""
        return now_ms - self._last_flush_ms >= self.config.flush_ms and self.recovery_point < self.next_offset

    def close(self) -> None:
        self._settle()
        if self._closed:
            return
        self.producer_state.take_snapshot(self.next_offset, sync=True)
        self.producer_state.close()
        for seg in self.segments:
            seg.close()
        self._closed = True

    def close_handlers(self) -> None:
        """Close without writing anything more (Kafka's ``closeHandlers``): for a replica whose
        dir was renamed for deletion (an abandoned copy), whose files are named otherwise now."""
        if self._closed:
            return
        for seg in self.segments:
            seg.close_handlers()
        self._closed = True

    def delete(self) -> None:
        """Close and delete the whole partition directory."""
        import shutil
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"UnifiedLog({self.name}, logStartOffset={self.log_start_offset}, "
                f"logEndOffset={self.next_offset}, segments={len(self.segments)})")


def _header_copy(buf, pos: int) -> bytearray:
    """A copy of the header of the batch at ``pos``, to change it without changing ``buf``."""
    return bytearray(memoryview(buf)[pos:pos + rec.HEADER_SIZE])


def _seal(head: bytearray, buf, pos: int) -> None:
    """Set the CRC of ``head`` (a changed copy of the header of the batch at ``pos`` in ``buf``)
    to that of the batch it will head: the copy's attributes to its end, then the records."""
    size = rec.parse_header(head, 0).size
    crc = rec.crc32c(memoryview(head)[rec.ATTRIBUTES_OFFSET:])
    struct.pack_into(">I", head, rec.CRC_OFFSET, rec.crc32c(memoryview(buf)[pos + rec.HEADER_SIZE:pos + size], crc))


def _max_timestamp(seg: LogSegment) -> int:
    return seg.max_timestamp_so_far


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
