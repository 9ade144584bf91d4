"""The aborted-transaction index of a segment: ``<base>.txnindex`` (Kafka's ``TransactionIndex``).

One fixed-size entry per aborted transaction whose ABORT marker landed in the
segment, in increasing ``last_offset`` order (Kafka's ``AbortedTxn``, version 0)::

    int16 version (0) | int64 producerId | int64 firstOffset | int64 lastOffset | int64 lastStableOffset

34 bytes each, no header. ``lastOffset`` is the marker's offset and
``lastStableOffset`` the LSO right after the transaction completed. Like
Kafka, the file is created only when the first entry is appended.

Entries are kept in memory as well (loaded lazily on first use: most segments
have no index file at all), so a read_committed fetch never touches the disk.
"""
from __future__ import annotations

import logging
import operator
import os
import struct
from bisect import bisect_left
from typing import NamedTuple

from minikafka.storage.checkpoint import fsync_path

log = logging.getLogger("minikafka.storage")

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
assert ENTRY_SIZE == 34
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(CURRENT_VERSION, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)


_LAST_OFFSET = operator.attrgetter("last_offset")


class CorruptTxnIndexError(Exception):
    pass


def decode_entries(data: bytes, path: str = "<buffer>") -> list[AbortedTxn]:
    """Parse whole entries; a trailing partial entry (torn write) is ignored."""
    out = []
    n = len(data) - len(data) % ENTRY_SIZE
    for pos in range(0, n, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version > CURRENT_VERSION or version < 0:
            raise CorruptTxnIndexError(f"Unexpected aborted transaction version {version} in transaction index "
                                       f"{path}, current version is {CURRENT_VERSION}")
        out.append(AbortedTxn(pid, first, last, lso))
    return out


class TransactionIndex:
    """Not thread-safe except :meth:`flush`."""

    def __init__(self, path: str, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None  # None: not loaded yet
        self._dirty = False                             # written since the last fsync

    # ------------------------------------------------------------------ reading
    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> list[AbortedTxn]:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        try:
            entries = decode_entries(data, self.path)
        except CorruptTxnIndexError as e:
            log.warning("%s; ignoring the index", e)
            return []
        good = len(entries) * ENTRY_SIZE
        if good != len(data):
            log.warning("Transaction index %s has %d trailing bytes (torn write); truncating",
                        self.path, len(data) - good)
            self._rewrite(entries)
        # drop anything out of order (cannot come from us; be defensive like Kafka's sanityCheck)
        clean: list[AbortedTxn] = []
        for e in entries:
            if clean and e.last_offset <= clean[-1].last_offset:
                log.warning("Transaction index %s: entry %s out of order; dropping it", self.path, e)
                continue
            clean.append(e)
        if len(clean) != len(entries):
            self._rewrite(clean)
        return clean

    def is_empty(self) -> bool:
        return not self.entries

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int,
                             out: list[AbortedTxn]) -> bool:
        """Append the entries overlapping ``[fetch_offset, upper_bound_offset)`` to ``out``.
        Returns True when the search is complete (no later segment can hold a relevant
        entry), as Kafka's ``collectAbortedTxns``.

        Kafka walks the entries from the first; entries end in increasing order (a marker's
        offset) and their LSOs never decrease, so the walk starts with a binary search at the
        first entry ending at or after ``fetch_offset``: an earlier one cannot overlap the
        range, and completes the search exactly when the one just before it does. A
        read_committed fetch then costs the entries of its range, not of the segment."""
        entries = self.entries
        i = bisect_left(entries, fetch_offset, key=_LAST_OFFSET)
        if i and entries[i - 1].last_stable_offset >= upper_bound_offset:
            return True
        for k in range(i, len(entries)):
            e = entries[k]
            if e.first_offset < upper_bound_offset:
                out.append(e)
            if e.last_stable_offset >= upper_bound_offset:
                return True
        return False

    def has_entry_for(self, last_offset: int) -> bool:
        for e in reversed(self.entries):
            if e.last_offset == last_offset:
                return True
            if e.last_offset < last_offset:
                return False
        return False

    # ------------------------------------------------------------------ writing
    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        if entries and entries[-1].last_offset >= txn.last_offset:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{txn.last_offset} is not greater than current last offset "
                             f"{entries[-1].last_offset} of index {self.path}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, txn.encode())
        finally:
            os.close(fd)
        entries.append(txn)
        self._dirty = True

    def insert(self, txn: AbortedTxn) -> None:
        """Add an entry rebuilt by recovery, keeping ``last_offset`` order (rewrites the file if
        it does not go at the end). No-op if an entry with that last offset exists."""
        entries = self.entries
        if not entries or entries[-1].last_offset < txn.last_offset:
            self.append(txn)
            return
        if self.has_entry_for(txn.last_offset):
            return
        entries.append(txn)
        entries.sort(key=lambda e: e.last_offset)
        self._rewrite(entries)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose ``last_offset >= offset`` (Kafka's ``truncateTo``)."""
        entries = self.entries
        keep = len(entries)
        while keep and entries[keep - 1].last_offset >= offset:
            keep -= 1
        if keep == len(entries):
            return
        del entries[keep:]
        try:
            with open(self.path, "r+b", buffering=0) as f:
                f.truncate(keep * ENTRY_SIZE)
        except FileNotFoundError:
            pass

    def reset(self) -> None:
        self._entries = []
        try:
            with open(self.path, "r+b", buffering=0) as f:
                f.truncate(0)
        except FileNotFoundError:
            pass

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(b"".join(e.encode() for e in entries))
        os.replace(tmp, self.path)
        self._dirty = True

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        fsync_path(self.path)

    def delete(self) -> None:
        self._entries = []
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path}, entries={len(self._entries) if self._entries is not None else '?'})"
