"""One log segment: ``<base>.log`` + ``<base>.index`` + ``<base>.timeindex`` (Kafka's ``LogSegment``).

The ``.log`` file holds v2 record batches back to back, exactly as on the
wire, with offsets assigned. Appends are one ``os.write`` on an unbuffered
``O_APPEND`` fd (the data is in the page cache, hence safe from a process
kill, when ``append`` returns); reads are ``os.pread``, and a fetch gets a
:class:`FileSlice` of the file that the server sends without reading it.
"""
from __future__ import annotations

import logging
import os
import struct
import threading
import time
from bisect import bisect_right
import weakref
from typing import Iterator, NamedTuple

from minikafka.protocol import record_walk
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import BatchHeader
from minikafka.storage.checkpoint import fsync_fd_or_path
from minikafka.storage.file_slice import FileHandle, FileSlice
from minikafka.storage.index import CorruptIndexError, OffsetIndex, TimeIndex
from minikafka.storage.transaction_index import TransactionIndex

# a stored batch passed the append's snappy block bound (a few times max.message.bytes when it
# was written); reading it back allows any block that bound could have let through
STORED_BLOCK_LIMIT = 1 << 30

log = logging.getLogger("minikafka.storage")

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

INT32_MAX = 2147483647
END_OF_SEGMENT = 1 << 63  # recover(from_offset=...): from the last index entry
_HEADER_SIZE = rec.HEADER_SIZE
_unpack_header = struct.Struct(">qiibIhiqqqhii").unpack_from
_make_header = BatchHeader._make

_DEFERRED_LOAD = threading.RLock()  # LogSegment._load_deferred_indexes

# read granularity when scanning a file batch by batch
_SCAN_CHUNK = 1 << 20


try:
    _IOV_MAX = os.sysconf("SC_IOV_MAX")  # buffers one writev takes (Linux: 1024)
except (AttributeError, ValueError, OSError):
    _IOV_MAX = 16  # POSIX's least


_HAVE_WRITEV = hasattr(os, "writev")


def _write_all(fd: int, parts: list, size: int) -> None:
    """Write the parts (bytes-like), in order, `size` bytes in all: one write or writev, looping
    only over what a partial write left (a file takes a write whole but for a full disk or a
    signal)."""
    if len(parts) == 1 or not _HAVE_WRITEV:
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        written = os.write(fd, data)
        if written < size:
            view = memoryview(data)
            while written < size:
                written += os.write(fd, view[written:])
        return
    n = os.writev(fd, parts) if len(parts) <= _IOV_MAX else 0
    if n == size:
        return  # the usual case: all of it at once
    parts = list(parts)
    i = 0
    while True:
        while i < len(parts) and n >= len(parts[i]):  # the parts written whole
            n -= len(parts[i])
            i += 1
        if i == len(parts):
            return
        if n:  # the rest of a part written in part
            parts[i] = memoryview(parts[i])[n:]
        n = os.writev(fd, parts[i:i + _IOV_MAX])


def filename_prefix(offset: int) -> str:
    """Kafka's 20-digit zero-padded file name for a base offset."""
    return f"{offset:020d}"


def segment_paths(dir_path: str, base_offset: int) -> tuple[str, str, str]:
    p = os.path.join(dir_path, filename_prefix(base_offset))
    return p + LOG_SUFFIX, p + INDEX_SUFFIX, p + TIME_INDEX_SUFFIX


class BatchPosition(NamedTuple):
    """Where a batch sits in a segment file."""
    position: int
    header: BatchHeader


class SegmentRead(NamedTuple):
    """What :meth:`LogSegment.read` sliced (Kafka's ``FetchDataInfo`` from ``LogSegment.read``)."""
    records: FileSlice | None  # the segment file from ``position`` (None: nothing): whole batches,
                               # possibly ending inside one (a cut batch, which clients skip)
    position: int             # file position of the first batch (Kafka's fetch offset metadata)
    first_entry_incomplete: bool  # the size limit cut the first batch (no min_one)


class InvalidBatch(Exception):
    """Raised internally by the recovery scan."""


class LogSegment:
    """A segment of a partition log. Not thread-safe (except :meth:`flush`)."""

    def __init__(self, dir_path: str, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_entries: int = 1310720, max_time_index_entries: int = 873813,
                 create: bool = False):
        self.dir = dir_path
        self.base_offset = base_offset
        self.log_path, index_path, time_index_path = segment_paths(dir_path, base_offset)
        self.index_interval_bytes = index_interval_bytes
        self.offset_index = OffsetIndex(index_path, base_offset, max_index_entries)
        self.time_index = TimeIndex(time_index_path, base_offset, max_time_index_entries)
        # aborted transactions whose ABORT marker is in this segment (file created on first entry)
        self.txn_index = TransactionIndex(os.path.join(dir_path, filename_prefix(base_offset)) + TXN_INDEX_SUFFIX,
                                          base_offset)
        # read/append descriptor, open while the segment is active; an inactive segment reads
        # through a read-only handle kept only while something (a slice being sent) holds it
        self._file: FileHandle | None = None
        self._reader = None  # weakref to that read-only FileHandle
        self.size = 0
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = base_offset
        self._rolling_based_timestamp: int | None = None  # first batch's max timestamp
        self.created_ms = int(time.time() * 1000)
        self._next_offset: int | None = None  # cached next offset after the last batch
        if create:
            if os.path.exists(self.log_path) and os.path.getsize(self.log_path) > 0:
                log.warning("Replacing stale segment file %s while creating a new segment", self.log_path)
            flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
            self._file = FileHandle.open(self.log_path, flags)
            for p in (self.offset_index.path, self.time_index.path):
                os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            self.txn_index.reset()  # a stale .txnindex must not survive
        else:
            self.size = os.path.getsize(self.log_path)

    # ------------------------------------------------------------------ fds
    def open_for_append(self) -> None:
        if self._file is None:
            self._file = FileHandle.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND)

    def _handle(self) -> FileHandle:
        """A handle to read from: the active segment's own, else a read-only one, shared while
        anyone holds it (a fetch response still sending a slice of this file)."""
        if self._file is not None:
            return self._file
        h = self._reader() if self._reader is not None else None
        if h is None:
            h = FileHandle.open(self.log_path)
            self._reader = weakref.ref(h)
        return h

    def pread(self, size: int, position: int) -> bytes:
        if size <= 0:
            return b""
        handle = self._handle()  # referenced until pread returns: that keeps it open
        return os.pread(handle.fd, size, position)

    # ------------------------------------------------------------------ state
    @property
    def next_offset(self) -> int:
        """Offset after the last batch (base offset if empty). Reads the tail batch if not cached."""
        if self._next_offset is None:
            last = self.last_batch()
            self._next_offset = last.header.next_offset if last else self.base_offset
        return self._next_offset

    def last_batch(self) -> BatchPosition | None:
        """The last batch in the file, found from the last index entry."""
        _, pos = self.offset_index.last_entry()
        last = None
        for bp in self.iter_batches(pos):
            last = bp
        if last is None and pos > 0:
            for bp in self.iter_batches(0):
                last = bp
        return last

    @property
    def largest_timestamp(self) -> int:
        """Max timestamp in the segment, or the file's mtime if none (Kafka's ``largestTimestamp``)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        try:
            return int(os.path.getmtime(self.log_path) * 1000)
        except OSError:
            return 0

    @property
    def rolling_based_timestamp(self) -> int | None:
        """Max timestamp of the first batch (Kafka rolls on segment.ms measured from it)."""
        if self._rolling_based_timestamp is None and self.size >= _HEADER_SIZE:
            data = self.pread(_HEADER_SIZE, 0)
            if len(data) == _HEADER_SIZE:
                self._rolling_based_timestamp = _make_header(_unpack_header(data, 0)).max_timestamp
        return self._rolling_based_timestamp

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        ts = self.rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now_ms - self.created_ms

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    # ------------------------------------------------------------------ append
    def append(self, parts: list, size: int, batches: list[tuple[int, int, int, int]]) -> None:
        """Append whole batches, offsets already assigned: ``parts``, ``size`` bytes in all, one
        after the other with one write (writev).

        ``batches`` lists ``(position, size, last_offset, max_timestamp)`` for each batch
        (positions from the start of ``parts``) so the indexes are updated without re-parsing.
        """
        if not size:
            return
        self.write(parts, size)
        self.appended(size, batches)

    def write(self, parts: list, size: int) -> None:
        """The bytes of :meth:`append` alone, at the file's end: the step that may run in a
        worker thread while the owner of the log runs on (nothing reads past ``size``, which
        :meth:`appended` moves once the bytes are whole). A failed write is undone."""
        if self._file is None:
            self.open_for_append()
        handle = self._file  # held across the write: a close meanwhile cannot close its fd
        physical = self.size
        try:
            _write_all(handle.fd, parts, size)
        except OSError as e:
            # undo a partial write so the file keeps whole batches only
            try:
                os.ftruncate(handle.fd, physical)
            except OSError:
                pass
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"Error appending to {self.log_path}: {e}") from e

    def appended(self, size: int, batches: list[tuple[int, int, int, int]]) -> None:
        """The rest of :meth:`append` once its bytes are written: size, indexes, next offset."""
        physical = self.size
        if physical == 0 and batches:
            self._rolling_based_timestamp = batches[0][3]
        interval = self.index_interval_bytes
        for bpos, batch_size, last_offset, max_ts in batches:
            if max_ts > self.max_timestamp_so_far:
                self.max_timestamp_so_far = max_ts
                self.offset_of_max_timestamp_so_far = last_offset
            if self.bytes_since_last_index_entry > interval:
                self.offset_index.append(last_offset, physical + bpos)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += batch_size
        self.size = physical + size
        if batches:
            self._next_offset = batches[-1][2] + 1

    # ------------------------------------------------------------------ scanning
    def iter_batches(self, start: int = 0, end: int | None = None,
                     chunk: int = 64 * 1024) -> Iterator[BatchPosition]:
        """Yield the complete batches from ``start`` (a batch boundary), headers only, no CRC check.

        Stops at the file end, at a partial batch, or at an implausible length. Small batches
        are read ``chunk`` bytes at a time; after a batch larger than a quarter chunk, the
        next header is read alone (a chunk would be mostly records nobody looks at).
        """
        if end is None:
            end = self.size
        handle = self._handle()  # held until the scan ends
        fd = handle.fd
        pos = start
        buf = b""
        buf_start = start
        size = 0
        big = chunk >> 2
        while end - pos >= _HEADER_SIZE:
            off = pos - buf_start
            if len(buf) - off < _HEADER_SIZE:
                buf = os.pread(fd, min(chunk if size < big else _HEADER_SIZE, end - pos), pos)
                buf_start, off = pos, 0
                if len(buf) < _HEADER_SIZE:
                    return
            header = _make_header(_unpack_header(buf, off))
            size = header.batch_length + 12
            if header.batch_length < rec.MIN_BATCH_LENGTH or pos + size > end:
                return
            yield BatchPosition(pos, header)
            pos += size

    def translate_offset(self, offset: int, starting_position: int = 0) -> BatchPosition | None:
        """The first batch whose last offset >= ``offset`` (Kafka's ``translateOffset``), or None.

        iter_batches' scan (4 KB chunks) written out: a Fetch translates an offset for each
        partition it reads (every one under read_committed), and a generator left mid-scan
        is closed with a GeneratorExit, a third of a translation's cost."""
        _, pos = self.offset_index.lookup(offset)
        pos = max(pos, starting_position)
        end = self.size
        handle = self._handle()  # held until the scan ends
        buf, buf_start, size = b"", pos, 0
        while end - pos >= _HEADER_SIZE:
            off = pos - buf_start
            if len(buf) - off < _HEADER_SIZE:
                # after a batch over a quarter chunk, the next header alone (as iter_batches)
                buf = os.pread(handle.fd, min(4096 if size < 1024 else _HEADER_SIZE, end - pos), pos)
                buf_start, off = pos, 0
                if len(buf) < _HEADER_SIZE:
                    return None
            header = _make_header(_unpack_header(buf, off))
            size = header.batch_length + 12
            if header.batch_length < rec.MIN_BATCH_LENGTH or pos + size > end:
                return None
            if header.base_offset + header.last_offset_delta >= offset:
                return BatchPosition(pos, header)
            pos += size
        return None

    # ------------------------------------------------------------------ read
    def read(self, start_offset: int, max_size: int, max_position: int | None,
             min_one: bool = False) -> SegmentRead | None:
        """The bytes of this segment from the batch holding ``start_offset`` (Kafka's
        ``LogSegment.read``): ``min(max_position - its position, max_size)`` of them, where with
        ``min_one`` the size limit is at least that first batch. The slice is the file's bytes
        as they are, so it may end inside a batch. ``max_position`` (exclusive) is where the
        readable part of this segment ends (the high watermark's or LSO's batch, or the
        segment's end); None: nothing here is readable. Returns None if no batch in this
        segment has an offset >= ``start_offset``.
        """
        handle = self._handle()  # one descriptor for the index scan and the slice
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        first_size = first.header.batch_length + 12
        limit = max(max_size, first_size) if min_one else max_size
        if limit == 0 or max_position is None:
            return SegmentRead(None, first.position, False)
        fetch_size = max(min(max_position - first.position, limit), 0)
        records = FileSlice(handle, first.position, fetch_size) if fetch_size else None
        return SegmentRead(records, first.position, limit < first_size)

    # ------------------------------------------------------------------ timestamps
    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int):
        """First record with timestamp >= ``timestamp`` and offset >= ``starting_offset``: ``(offset, ts)``,
        or None. A generator of record-walk steps (a stored batch may inflate to a gigabyte: a
        caller on an event loop runs it in slices, others with ``record_walk.run``).

        Kafka's ``LogSegment.findOffsetByTimestamp``: the time index gives a
        lower bound, the offset index a position, then batches are scanned by
        header and only a batch whose max timestamp reaches the target is decoded.
        """
        _, ts_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(ts_offset, starting_offset))
        for bp in self.iter_batches(position):
            h = bp.header
            if h.max_timestamp >= timestamp and h.base_offset + h.last_offset_delta >= starting_offset:
                data = self.pread(h.batch_length + 12, bp.position)
                found = yield from _first_record(data, h,
                                                 lambda offset, ts: ts >= timestamp and offset >= starting_offset)
                if found is not None:
                    return found
        return None

    def find_max_timestamp_offset(self):
        """``(timestamp, offset)`` of the first record carrying this segment's max timestamp, or
        None (a generator of record-walk steps). With no timestamp at all (-1), Kafka still looks
        for a batch stamped -1 (records without a timestamp): the first one from the segment's start."""
        if self.max_timestamp_so_far < 0:
            for bp in self.iter_batches():
                if bp.header.max_timestamp == self.max_timestamp_so_far:
                    return (yield from self.find_first_record_with_timestamp(bp.header.max_timestamp,
                                                                             bp.header.base_offset))
            return None
        return (yield from self.find_first_record_with_timestamp(self.max_timestamp_so_far,
                                                                 self.offset_of_max_timestamp_so_far))

    def find_first_record_with_timestamp(self, timestamp: int, batch_offset: int):
        bp = self.translate_offset(batch_offset)
        if bp is None:
            return None
        h = bp.header
        data = self.pread(h.batch_length + 12, bp.position)
        found = yield from _first_record(data, h, lambda _offset, ts: ts == timestamp)
        if found is not None:
            return found[1], found[0]
        # e.g. LogAppendTime or no record decodes to it: fall back to the batch's last offset
        return timestamp, h.base_offset + h.last_offset_delta

    # ------------------------------------------------------------------ recovery
    def load_indexes(self) -> None:
        """Load both index files from disk; raise CorruptIndexError if either is missing or bad."""
        self.offset_index.load(self.size)
        self.time_index.load()
        self._indexes_deferred = False
        ts, off = self.time_index.last_entry()
        if off < self.base_offset:
            raise CorruptIndexError(f"Time index {self.time_index.path} has an offset below the base offset")
        self.max_timestamp_so_far = ts
        self.offset_of_max_timestamp_so_far = off

    def defer_indexes(self) -> None:
        """A segment start-up trusts (Kafka's ``LazyIndex``): its index files, and the max
        timestamp the time index holds, are read on first use, not at start. A file found
        corrupt then is rebuilt from the log."""
        self._indexes_deferred = True
        self.__dict__.pop("max_timestamp_so_far", None)
        self.__dict__.pop("offset_of_max_timestamp_so_far", None)
        self.offset_index.defer_load(self._load_deferred_indexes)
        self.time_index.defer_load(self._load_deferred_indexes)

    def __getattr__(self, name):
        # only called for attributes not set: the max timestamp of a segment whose indexes
        # are not read yet (defer_indexes)
        if name in ("max_timestamp_so_far", "offset_of_max_timestamp_so_far") \
                and self.__dict__.get("_indexes_deferred"):
            self._load_deferred_indexes()
            return self.__dict__[name]
        raise AttributeError(name)

    def _load_deferred_indexes(self) -> None:
        # first uses may race (the owner and a log cleaner thread): one loads, the other waits
        with _DEFERRED_LOAD:
            if not self.__dict__.get("_indexes_deferred"):
                return
            try:
                self.load_indexes()
            except CorruptIndexError as e:
                log.warning("Rebuilding index files for %s: %s", self.log_path, e)
                # a segment in use: its bytes stay as they are (recovery at start is what truncates)
                self.recover(rebuild=True, truncate=False)
            self._indexes_deferred = False

    def recover(self, from_offset: int | None = None, *, rebuild: bool = False, truncate: bool = True) -> int:
        """Validate the log file batch by batch, truncate at the first invalid batch and
        bring the indexes in line with the scanned part (Kafka's ``LogSegment.recover``).

        ``from_offset`` (indexes loaded and sane): the batches before the last offset index
        entry at or below it are trusted, as data below a recovery point is (it was fsynced
        before the recovery point moved past it), and the scan starts at that entry's batch;
        the whole file if that batch is not a valid one. Otherwise the whole file is scanned.
        Index entries are written only where they differ from what the scan finds (the
        indexes are read first unless ``rebuild``: they are known missing or corrupt); a
        recovery that finds everything in order writes nothing. The epochs stamped on the
        scanned batches are left in :attr:`scan_epochs` (each epoch higher than all before it,
        with its first batch's base offset). Returns the number of bytes truncated; logs a
        WARNING naming the file, the byte position and the bytes dropped when it truncates.
        ``truncate=False`` (a segment in use whose index is rebuilt): invalid data is
        reported, not cut.
        """
        start = 0
        keep = tkeep = 0        # index entries kept as they are (before the scanned part)
        max_ts, max_ts_off = -1, self.base_offset
        prev_next = self.base_offset
        first_max = None        # the batch at `start` must end at this offset (its index entry's)
        if from_offset is not None:
            oi, ti = self.offset_index, self.time_index
            keep = bisect_right(oi._rel, from_offset - self.base_offset)
            if keep:
                first_max, start = oi.entry(keep - 1)
                tkeep = bisect_right(ti._rel, first_max - self.base_offset)
                if tkeep:
                    max_ts, max_ts_off = ti.entry(tkeep - 1)
                prev_next = None  # (checked against first_max instead)
        elif not rebuild:
            try:
                self.load_indexes()
            except CorruptIndexError:
                rebuild = True
        index_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        epochs: list[tuple[int, int]] = []
        top_epoch = -1
        bytes_since = 0
        valid = start
        reason = None
        fd = os.open(self.log_path, os.O_RDONLY)
        try:
            file_size = os.fstat(fd).st_size
            buf = b""
            buf_start = start
            pos = start
            # (1 MB preads: cheaper in CPU than mapping the file, whose page faults cost more
            # than the copy)
            while pos < file_size:
                off = pos - buf_start
                if len(buf) - off < _HEADER_SIZE:
                    buf = os.pread(fd, min(_SCAN_CHUNK, file_size - pos), pos)
                    buf_start, off = pos, 0
                if len(buf) - off < _HEADER_SIZE:
                    reason = f"truncated batch header ({len(buf) - off} bytes)"
                    break
                h = _make_header(_unpack_header(buf, off))
                size = h.batch_length + 12
                if h.magic != rec.MAGIC:
                    reason = f"invalid magic {h.magic}"
                    break
                if h.batch_length < rec.MIN_BATCH_LENGTH:
                    reason = f"invalid batch length {h.batch_length}"
                    break
                if pos + size > file_size:
                    reason = f"torn batch (declares {size} bytes, {file_size - pos} present)"
                    break
                if len(buf) - off < size:
                    buf = os.pread(fd, max(size, min(_SCAN_CHUNK, file_size - pos)), pos)
                    buf_start, off = pos, 0
                    if len(buf) < size:
                        reason = "short read"
                        break
                crc = rec.crc32c(memoryview(buf)[off + 21: off + size])
                if crc != h.crc:
                    reason = f"CRC mismatch (stored {h.crc}, computed {crc})"
                    break
                last = h.base_offset + h.last_offset_delta
                if h.last_offset_delta < 0 or h.records_count < 0:
                    reason = "invalid offset delta or record count"
                    break
                if (prev_next is not None and h.base_offset < prev_next) or h.base_offset < self.base_offset:
                    reason = f"non-monotonic base offset {h.base_offset}"
                    break
                if first_max is not None and pos == start and last != first_max:
                    # (an entry is the last offset of the batch at its position: this file lost
                    # writes, or was not written by us; either way the whole segment is scanned)
                    reason = f"the index entry for offset {first_max} points at a batch ending at {last}"
                    break
                if not self.can_convert_to_relative_offset(last):
                    reason = f"offset {last} overflows the segment index"
                    break
                if h.max_timestamp > max_ts:
                    max_ts, max_ts_off = h.max_timestamp, last
                if h.partition_leader_epoch > top_epoch:
                    top_epoch = h.partition_leader_epoch
                    epochs.append((top_epoch, h.base_offset))
                if bytes_since > self.index_interval_bytes:
                    index_entries.append((last, pos))
                    time_entries.append((max_ts, max_ts_off))
                    bytes_since = 0
                bytes_since += size
                prev_next = last + 1
                pos += size
                valid = pos
        finally:
            os.close(fd)
        if first_max is not None and valid == start and file_size > start:
            # the batch the index entry points at is not a valid one: start over from position 0
            return self.recover(truncate=truncate)
        truncated = file_size - valid
        if truncated > 0 and not truncate:
            log.error("Found invalid data in log segment %s at byte position %d: %s; its index covers the "
                      "%d bytes before it", self.log_path, valid, reason, valid)
            truncated = 0
        elif truncated > 0:
            log.warning("Found invalid data in log segment %s at byte position %d: %s; truncating %d bytes "
                        "(file size %d -> %d)", self.log_path, valid, reason, truncated, file_size, valid)
            with open(self.log_path, "r+b", buffering=0) as f:
                f.truncate(valid)
                os.fsync(f.fileno())
            self.size = valid
        else:
            self.size = valid
        # the time index: the running max at each index entry where it grew, then the segment's
        # max timestamp as its last entry (like Kafka's)
        tes: list[tuple[int, int]] = []
        top = self.time_index.entry(tkeep - 1)[0] if tkeep else -1
        for t, o in time_entries + ([(max_ts, max_ts_off)] if max_ts >= 0 else []):
            if t > top:
                tes.append((t, o))
                top = t
        if rebuild:
            self.offset_index.write_all(index_entries)
            self.time_index.write_all(tes)
            self._indexes_deferred = False
        else:
            self.offset_index.replace_tail(keep, index_entries)
            self.time_index.replace_tail(tkeep, tes)
        self.scan_epochs = epochs
        self.max_timestamp_so_far = max_ts
        self.offset_of_max_timestamp_so_far = max_ts_off
        self.bytes_since_last_index_entry = bytes_since
        self._next_offset = prev_next if prev_next is not None else None
        if valid == 0:
            self._next_offset = self.base_offset
        self._rolling_based_timestamp = None
        return truncated

    def bytes_since_last_index(self) -> int:
        _, pos = self.offset_index.last_entry()
        return self.size - pos if self.offset_index.entries else self.size

    # ------------------------------------------------------------------ lifecycle
    def on_become_inactive(self) -> None:
        """On roll: record the segment's max timestamp in the time index and close the write fd."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
        self.offset_index.close()
        self.time_index.close()
        self._close_fd()

    def truncate_to(self, offset: int) -> int:
        """Remove batches with base offset >= ``offset``. Returns bytes removed."""
        bp = self.translate_offset(offset)
        if bp is None:
            return 0
        position = bp.position  # like Kafka, the whole batch containing `offset` goes
        if position >= self.size:
            return 0
        removed = self.size - position
        with open(self.log_path, "r+b", buffering=0) as f:
            f.truncate(position)
        self.size = position
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self._next_offset = None
        # recompute the running max timestamp from what is left (from the last index entry on)
        self.recover(from_offset=END_OF_SEGMENT)
        return removed

    def flush(self, data_only: bool = False) -> None:
        """fsync the log and (unless ``data_only``) index files (safe to call from another thread)."""
        handle = self._file  # held across the fsync: a concurrent roll cannot close it
        fsync_fd_or_path(handle.fd if handle is not None else None, self.log_path)
        if data_only:
            return
        for idx in (self.offset_index, self.time_index, self.txn_index):
            try:
                idx.flush()
            except OSError:
                pass

    def _close_fd(self) -> None:
        """Let go of the descriptors: closed now, or when the last slice of this file being
        sent lets go of it."""
        self._file = None
        self._reader = None

    def close(self) -> None:
        # (a segment whose indexes were never read has nothing to add to them)
        if not self.__dict__.get("_indexes_deferred") and self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
        self._close_fd()
        self.offset_index.close()
        self.time_index.close()

    def close_handlers(self) -> None:
        """Let go of the files without writing anything more to them (their dir was renamed
        for deletion: its files are named otherwise now)."""
        self._close_fd()
        for idx in (self.__dict__.get("offset_index"), self.__dict__.get("time_index")):
            if idx is not None:
                idx._close_fd()

    def delete(self) -> None:
        """Delete all files of this segment."""
        self._close_fd()
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        prefix = os.path.join(self.dir, filename_prefix(self.base_offset))
        for suffix in (LOG_SUFFIX,):
            try:
                os.unlink(prefix + suffix)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return (f"LogSegment(baseOffset={self.base_offset}, size={self.size}, "
                f"largestRecordTimestamp={self.max_timestamp_so_far})")


class _Found(Exception):
    pass


def _first_record(data, h: rec.BatchHeader, wanted):
    """``(offset, timestamp)`` of the batch's first record for which ``wanted(offset, timestamp)``
    holds, or None: read with the record walk (bounded memory whatever the batch inflates to),
    a generator of its steps."""
    log_append = h.attributes & rec.TIMESTAMP_TYPE_MASK

    def visit(_i, td, od, _kl, _vl, _key):
        ts = h.max_timestamp if log_append else (h.base_timestamp + td + (1 << 63)) % (1 << 64) - (1 << 63)
        if wanted(h.base_offset + od, ts):
            raise _Found(h.base_offset + od, ts)

    try:
        yield from record_walk.walk_records(data, 0, h.size, h.records_count, h.compression, visit=visit,
                                            block_limit=STORED_BLOCK_LIMIT)
    except _Found as found:
        return found.args
    return None
