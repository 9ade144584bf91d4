"""Sparse segment indexes in Kafka's on-disk formats.

``.index`` (:class:`OffsetIndex`): 8-byte entries, int32 offset relative to the
segment's base offset + int32 physical position in the ``.log`` file.
``.timeindex`` (:class:`TimeIndex`): 12-byte entries, int64 timestamp + int32
relative offset. Both are big-endian and strictly increasing.

Unlike Kafka we do not preallocate and mmap the files: entries live in memory
in ``array`` objects (lookups are a bisect and never touch the disk) and are
written to the file with ``os.write`` in batches: every ``WRITE_BATCH``
entries, and always before an fsync, a close or a rename, so the file is
``entries * entry_size`` bytes of whole entries. A produce request adding an
entry to both indexes paid two more syscalls for them than for its records
(Kafka's mmap pays none). A kill -9 loses at most the entries of the last
batch: they index data past the recovery point (every flush writes them out
first), and recovery rebuilds the indexes of every segment past it, as
Kafka's does.

As Kafka's ``LazyIndex``, the index of a segment that start-up did not need to
recover is read on first use (:meth:`_IndexFile.defer_load`): a start opens no
index file of the segments it trusts. A file found corrupt then is rebuilt
from the log by the segment (``on_corrupt``).
"""
from __future__ import annotations

import os
import struct
import sys
import threading
from array import array
from bisect import bisect_left, bisect_right
from itertools import islice
from operator import gt, lt
from typing import Callable

from minikafka.storage.checkpoint import fsync_fd_or_path, read_file

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_BIG_ENDIAN = sys.byteorder == "big"


class CorruptIndexError(Exception):
    """An index file failed its sanity check (it is then rebuilt from the log)."""


def _be_array(typecode: str, data: bytes) -> array:
    a = array(typecode)
    a.frombytes(data)
    if not _BIG_ENDIAN:
        a.byteswap()
    return a


def _strictly_increasing(a) -> bool:
    """Compared in C: the sanity check of a million-entry index costs milliseconds."""
    return all(map(lt, a, islice(a, 1, None)))


def _not_decreasing(a) -> bool:
    return not any(map(gt, a, islice(a, 1, None)))


class _IndexFile:
    """Append-only file with an fd opened lazily, and its entries in memory (``_ARRAYS``),
    read on first use once :meth:`defer_load` was called."""

    entry_size = 0
    _ARRAYS: tuple[str, ...] = ()
    WRITE_BATCH = 256  # entries kept in memory only, at most, before they are written out

    def __init__(self, path: str, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self._fd: int | None = None
        self._deferred: Callable[[], None] | None = None
        self._on_disk = 0  # entries in the file; those after them are in memory only
        # a flush may run in a worker thread while the event loop appends: writes out and
        # truncations take it (appends only grow the arrays past _on_disk)
        self._file_lock = threading.Lock()

    def defer_load(self, load: Callable[[], None]) -> None:
        """Read the file when its entries are first needed: ``load`` (which reads them,
        sanity check and rebuild included, and must be safe to call from two threads at
        once) runs then, not now."""
        for name in self._ARRAYS:
            self.__dict__.pop(name, None)
        self._deferred = load

    @property
    def loaded(self) -> bool:
        return self._deferred is None

    def __getattr__(self, name):
        # only called for attributes not set: the entry arrays of an index not read yet
        # (``load`` serializes concurrent first uses and clears ``_deferred`` once they are set)
        deferred = self.__dict__.get("_deferred")
        if deferred is not None and name in self._ARRAYS:
            deferred()
            return self.__dict__[name]
        raise AttributeError(name)

    def _complete_entries(self) -> int:
        """Entries appended whole (an append adds to two arrays, one after the other)."""
        a, b = (self.__dict__[name] for name in self._ARRAYS)
        return min(len(a), len(b))

    def _entry_bytes(self, start: int, end: int) -> bytes:
        raise NotImplementedError


    def write_out(self) -> None:
        """Write the entries appended since the last write-out to the file."""
        if self._deferred is not None:
            return  # (not read yet: nothing appended)
        with self._file_lock:
            n = self._complete_entries()
            if n <= self._on_disk:
                return
            data = self._entry_bytes(self._on_disk, n)
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(self._fd, data)
            self._on_disk = n

    def _truncate_file(self, n: int) -> None:
        """After the arrays were cut to ``n`` entries: the file too, if it has more."""
        with self._file_lock:
            if n < self._on_disk:
                self._close_fd()
                with open(self.path, "r+b", buffering=0) as f:
                    f.truncate(n * self.entry_size)
                self._on_disk = n

    def _rewrite(self, data: bytes, entries: int) -> None:
        """Replace the file's contents with ``entries`` whole entries (truncation/rebuild)."""
        with self._file_lock:
            self._close_fd()
            tmp = self.path + ".tmp"
            with open(tmp, "wb", buffering=0) as f:
                f.write(data)
            os.replace(tmp, self.path)
            self._on_disk = entries

    def flush(self) -> None:
        self.write_out()
        fsync_fd_or_path(self._fd, self.path)

    def _close_fd(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            finally:
                self._fd = None

    def close(self) -> None:
        self.write_out()
        self._close_fd()

    def delete(self) -> None:
        self._close_fd()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def rename(self, new_path: str) -> None:
        self.close()
        if os.path.exists(self.path):
            os.replace(self.path, new_path)
        self.path = new_path


class OffsetIndex(_IndexFile):
    """Maps offsets to file positions (Kafka's ``OffsetIndex``)."""

    entry_size = 8
    _ARRAYS = ("_rel", "_pos")

    def __init__(self, path: str, base_offset: int, max_entries: int = 1310720):
        super().__init__(path, base_offset)
        self.max_entries = max_entries
        self._rel = array("i")   # relative offsets
        self._pos = array("i")   # physical positions

    # -- state ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._rel)

    @property
    def entries(self) -> int:
        return len(self._rel)

    @property
    def is_full(self) -> bool:
        return len(self._rel) >= self.max_entries

    @property
    def last_offset(self) -> int:
        """Largest offset in the index (base offset if empty)."""
        return self.base_offset + self._rel[-1] if self._rel else self.base_offset

    def last_entry(self) -> tuple[int, int]:
        if not self._rel:
            return self.base_offset, 0
        return self.base_offset + self._rel[-1], self._pos[-1]

    def entry(self, n: int) -> tuple[int, int]:
        return self.base_offset + self._rel[n], self._pos[n]

    # -- load / sanity -------------------------------------------------------
    def load(self, log_size: int) -> None:
        """Read the file into memory and sanity check it; raise CorruptIndexError if bad.

        Checks (a superset of Kafka's ``OffsetIndex.sanityCheck``): size a
        multiple of 8, relative offsets >= 0 and strictly increasing, positions
        increasing and inside the log file.
        """
        data = read_file(self.path)
        if data is None:
            raise CorruptIndexError(f"Index file {self.path} is missing")
        if len(data) % self.entry_size:
            raise CorruptIndexError(f"Index file {self.path} is corrupt, found {len(data)} bytes which is "
                                    f"neither positive nor a multiple of {self.entry_size}")
        a = _be_array("i", data)
        rel, pos = a[0::2], a[1::2]
        if rel:
            if rel[0] < 0 or pos[0] < 0 or pos[-1] >= max(log_size, 1):
                raise CorruptIndexError(f"Index file {self.path} has entries outside the segment "
                                        f"(first relative offset {rel[0]}, last position {pos[-1]}, log size {log_size})")
            if not (_strictly_increasing(rel) and _strictly_increasing(pos)):
                raise CorruptIndexError(f"Index file {self.path} is not strictly increasing")
        self._rel, self._pos = rel, pos
        self._on_disk = len(rel)
        self._deferred = None

    def _entry_bytes(self, start: int, end: int) -> bytes:
        inter = array("i", [0]) * (2 * (end - start))
        inter[0::2] = self._rel[start:end]
        inter[1::2] = self._pos[start:end]
        if not _BIG_ENDIAN:
            inter.byteswap()
        return inter.tobytes()

    # -- mutation ------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self._rel and rel <= self._rel[-1]:
            raise ValueError(f"Attempt to append an offset ({offset}) no larger than the last offset "
                             f"appended ({self.last_offset}) to {self.path}")
        self._rel.append(rel)
        self._pos.append(position)
        if len(self._rel) - self._on_disk >= self.WRITE_BATCH:
            self.write_out()

    def truncate_entries(self, n: int) -> None:
        """Keep only the first ``n`` entries (file and memory)."""
        if n >= len(self._rel):
            return
        del self._rel[n:]
        del self._pos[n:]
        self._truncate_file(n)

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= ``offset`` (Kafka's ``truncateTo``)."""
        self.truncate_entries(bisect_right(self._rel, offset - self.base_offset - 1))

    def truncate_to_position(self, position: int) -> None:
        """Remove entries pointing at or beyond ``position``."""
        self.truncate_entries(bisect_right(self._pos, position - 1))

    def reset(self) -> None:
        """Drop all entries (before a rebuild)."""
        self._rel = array("i")
        self._pos = array("i")
        self._deferred = None
        self._rewrite(b"", 0)

    def write_all(self, entries: list[tuple[int, int]]) -> None:
        """Replace the whole index with ``[(offset, position), ...]`` (rebuild)."""
        rel = array("i", (o - self.base_offset for o, _ in entries))
        pos = array("i", (p for _, p in entries))
        inter = array("i", [0]) * (2 * len(rel))
        inter[0::2] = rel
        inter[1::2] = pos
        if not _BIG_ENDIAN:
            inter.byteswap()
        self._rel, self._pos = rel, pos
        self._deferred = None
        self._rewrite(inter.tobytes(), len(rel))

    def replace_tail(self, keep: int, entries: list[tuple[int, int]]) -> None:
        """Make the entries after the first ``keep`` be ``[(offset, position), ...]`` (a
        recovery scan's result), writing only where the file differs: a recovery that finds
        the index right writes nothing."""
        same = 0
        rel, pos = self._rel, self._pos
        n = len(rel)
        base = self.base_offset
        while (same < len(entries) and keep + same < n and rel[keep + same] == entries[same][0] - base
               and pos[keep + same] == entries[same][1]):
            same += 1
        if same == len(entries) and keep + same == n:
            return
        self.truncate_entries(keep + same)
        for offset, position in entries[same:]:
            self.append(offset, position)

    # -- lookup --------------------------------------------------------------
    def fetch_upper_bound_offset(self, position: int) -> int | None:
        """Kafka's ``fetchUpperBoundOffset`` for a fetch ending at file ``position``: the offset of
        the first entry at or after it, None if none. As Kafka's binary search
        (``AbstractIndex.indexSlotRangeFor``, SMALLEST_UPPER_BOUND) never compares the first
        entry of its range, an exact match of entry 0 yields entry 1 (None if it is the only one)."""
        i = bisect_left(self._pos, position)
        if i == 0 and self._pos and self._pos[0] == position:
            i = 1
        return self.base_offset + self._rel[i] if i < len(self._pos) else None

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """Largest entry with offset <= target: ``(offset, position)``; ``(base_offset, 0)`` if none."""
        i = bisect_right(self._rel, target_offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._rel[i], self._pos[i]

    def lookup_position(self, position: int) -> tuple[int, int] | None:
        """Largest entry with position <= ``position``, or None."""
        i = bisect_right(self._pos, position) - 1
        if i < 0:
            return None
        return self.base_offset + self._rel[i], self._pos[i]


class TimeIndex(_IndexFile):
    """Maps timestamps to offsets (Kafka's ``TimeIndex``): entries are the running max timestamp."""

    entry_size = 12
    _ARRAYS = ("_ts", "_rel")

    def __init__(self, path: str, base_offset: int, max_entries: int = 873813):
        super().__init__(path, base_offset)
        self.max_entries = max_entries
        self._ts = array("q")
        self._rel = array("q")

    def __len__(self) -> int:
        return len(self._ts)

    @property
    def entries(self) -> int:
        return len(self._ts)

    @property
    def is_full(self) -> bool:
        return len(self._ts) >= self.max_entries

    def last_entry(self) -> tuple[int, int]:
        """``(timestamp, offset)`` of the last entry; ``(-1, base_offset)`` if empty."""
        if not self._ts:
            return -1, self.base_offset
        return self._ts[-1], self.base_offset + self._rel[-1]

    def entry(self, n: int) -> tuple[int, int]:
        return self._ts[n], self.base_offset + self._rel[n]

    def load(self, max_offset: int | None = None) -> None:
        """Read and sanity check (size multiple of 12, timestamps and offsets increasing,
        relative offsets >= 0 and, when known, not beyond ``max_offset``)."""
        data = read_file(self.path)
        if data is None:
            raise CorruptIndexError(f"Time index file {self.path} is missing")
        if len(data) % self.entry_size:
            raise CorruptIndexError(f"Time index file {self.path} is corrupt, found {len(data)} bytes which is "
                                    f"neither positive nor a multiple of {self.entry_size}")
        entries = list(_TIME_ENTRY.iter_unpack(data))
        ts = array("q", [t for t, _ in entries])
        rel = array("q", [r for _, r in entries])
        if entries:
            if rel[0] < 0:
                raise CorruptIndexError(f"Time index file {self.path} has a negative relative offset")
            if max_offset is not None and self.base_offset + rel[-1] > max_offset:
                raise CorruptIndexError(f"Time index file {self.path} points beyond the segment "
                                        f"(offset {self.base_offset + rel[-1]} > {max_offset})")
            if not (_strictly_increasing(ts) and _not_decreasing(rel)):
                raise CorruptIndexError(f"Time index file {self.path} is not increasing")
        self._ts, self._rel = ts, rel
        self._on_disk = len(ts)
        self._deferred = None

    def _entry_bytes(self, start: int, end: int) -> bytes:
        pack = _TIME_ENTRY.pack
        return b"".join(map(pack, self._ts[start:end], self._rel[start:end]))

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Append if ``timestamp`` is larger than the last entry's (Kafka's ``maybeAppend``)."""
        if self._ts and timestamp <= self._ts[-1]:
            return False
        rel = offset - self.base_offset
        if self._rel and rel < self._rel[-1]:
            raise ValueError(f"Attempt to append an offset ({offset}) smaller than the last offset "
                             f"in time index {self.path}")
        self._ts.append(timestamp)
        self._rel.append(rel)
        if len(self._ts) - self._on_disk >= self.WRITE_BATCH:
            self.write_out()
        return True

    def truncate_entries(self, n: int) -> None:
        if n >= len(self._ts):
            return
        del self._ts[n:]
        del self._rel[n:]
        self._truncate_file(n)

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= ``offset``."""
        self.truncate_entries(bisect_right(self._rel, offset - self.base_offset - 1))

    def reset(self) -> None:
        self._ts = array("q")
        self._rel = array("q")
        self._deferred = None
        self._rewrite(b"", 0)

    def write_all(self, entries: list[tuple[int, int]]) -> None:
        """Replace the index with ``[(timestamp, offset), ...]``."""
        self._ts = array("q", (t for t, _ in entries))
        self._rel = array("q", (o - self.base_offset for _, o in entries))
        self._deferred = None
        self._rewrite(self._entry_bytes(0, len(entries)), len(entries))

    def replace_tail(self, keep: int, entries: list[tuple[int, int]]) -> None:
        """Make the entries after the first ``keep`` be ``[(timestamp, offset), ...]``,
        writing only where the file differs (see :meth:`OffsetIndex.replace_tail`)."""
        same = 0
        ts, rel = self._ts, self._rel
        n = len(ts)
        base = self.base_offset
        while (same < len(entries) and keep + same < n and ts[keep + same] == entries[same][0]
               and rel[keep + same] == entries[same][1] - base):
            same += 1
        if same == len(entries) and keep + same == n:
            return
        self.truncate_entries(keep + same)
        for t, offset in entries[same:]:
            self.maybe_append(t, offset)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp <= target: ``(timestamp, offset)``; ``(-1, base_offset)`` if none."""
        i = bisect_right(self._ts, target_timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._ts[i], self.base_offset + self._rel[i]
