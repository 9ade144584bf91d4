"""A partition's leader epoch cache (Kafka's ``LeaderEpochFileCache``) and its
``leader-epoch-checkpoint`` file (Kafka's ``LeaderEpochCheckpointFile``).

The cache maps each leader epoch that holds data to the offset of its first
batch, plus the current epoch, which starts at the log end offset the broker
had when it became leader. Epochs and start offsets both strictly increase.
OffsetForLeaderEpoch, the Fetch divergence check and ListOffsets (earliest)
answer from it.

File format (Kafka's, version 0)::

    0
    <number of entries>
    <epoch> <start offset>
    ...

Durability: changes are written at once (temp file + rename; the cuts a load makes
and the epoch a start makes current wait for the log's next ``assign``, which comes
before any append) and fsynced by ``flush``, which the log calls before it makes
data durable, so the file never lacks an epoch of data that survives a crash. Data
that was not flushed is recovered batch by batch on an unclean load, which re-reads
the epochs stamped on it (Kafka's LogSegment.recover), and every load cuts the cache
to the recovered log (``truncate_from_end(LEO)``, ``truncate_from_start(log start
offset)``), so a file with entries too many is repaired. (Kafka writes and fsyncs
each new entry at once, so a restart writes one file per partition; here a start
writes none: minikafka.storage.log_manager.)
"""
from __future__ import annotations

import logging
import os
from bisect import bisect_left, bisect_right

from minikafka.storage.checkpoint import fsync_dir, fsync_path, read_file

log = logging.getLogger("minikafka.storage")

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0


class LeaderEpochCheckpointFile:
    """``<partition dir>/leader-epoch-checkpoint``."""

    def __init__(self, dir_path: str):
        self.path = os.path.join(dir_path, LEADER_EPOCH_CHECKPOINT)

    def read(self) -> list[tuple[int, int]] | None:
        """The entries, or None when the file is missing or malformed (the caller rebuilds
        the cache from the epochs stamped on the log's batches)."""
        try:
            data = read_file(self.path)
            if data is None:
                return None
            lines = data.decode("utf-8", "replace").splitlines()
        except OSError as e:
            log.warning("Cannot read %s (%s); rebuilding the leader epoch cache from the log", self.path, e)
            return None
        try:
            if len(lines) < 2 or int(lines[0].strip()) != _VERSION:
                raise ValueError(f"unrecognised version or header {lines[:2]!r}")
            count = int(lines[1].strip())
            entries = []
            for line in lines[2:]:
                if not line.strip():
                    continue
                epoch, offset = line.split()
                entries.append((int(epoch), int(offset)))
            if len(entries) != count:
                raise ValueError(f"expected {count} entries but found {len(entries)}")
            return entries
        except ValueError as e:
            log.warning("Malformed %s (%s); rebuilding the leader epoch cache from the log", self.path, e)
            return None

    def write(self, entries: list[tuple[int, int]]) -> None:
        """Replace the file atomically (no fsync: see ``sync``)."""
        data = "\n".join([str(_VERSION), str(len(entries))] + [f"{e} {o}" for e, o in entries]) + "\n"
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(data)
        os.replace(tmp, self.path)

    def sync(self) -> None:
        """fsync the file and its directory (the rename)."""
        fsync_path(self.path)
        fsync_dir(os.path.dirname(self.path))


class LeaderEpochFileCache:
    """(epoch, start offset) entries, in increasing order of both."""

    def __init__(self, dir_path: str):
        self.checkpoint = LeaderEpochCheckpointFile(dir_path)
        self._epochs: list[int] = []
        self._starts: list[int] = []
        self._written = self._synced = 0  # file versions written / known durable
        self._file_behind = False  # cut in memory only (on load): the next assign writes the file
        stored = self.checkpoint.read()
        # None: no usable file; the log rebuilds the entries from its batches
        self.loaded_from_file = stored is not None
        for epoch, start in stored or ():
            self._assign(epoch, start)

    # ------------------------------------------------------------------ reading
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._starts[0]) if self._epochs else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` for OffsetForLeaderEpoch (Kafka's ``endOffsetFor``): the
        largest epoch <= the requested one and the start offset of the first epoch after it,
        or the log end offset for the current epoch; (-1, -1) when unknown."""
        epochs = self._epochs
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epochs and epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            # older than anything cached (that data is gone): the first known epoch's start
            return requested_epoch, self._starts[0]
        return epochs[higher - 1], self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds ``offset`` (Kafka's ``epochForOffset``)."""
        i = bisect_right(self._starts, offset)
        return self._epochs[i - 1] if i else None

    # ------------------------------------------------------------------ changes
    def assign(self, epoch: int, start_offset: int, write: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; entries that would break the
        ordering (a later epoch, or one starting at or after it) are dropped, as Kafka does.
        ``write=False`` (a start making every partition's new epoch current) leaves the file
        behind: the log writes it before the first batch of the epoch (no epoch of data is
        ever missing from the file), and an epoch in which nothing is written never needs
        it (the next load cuts such an entry anyway)."""
        changed = self._assign(epoch, start_offset)
        if changed or self._file_behind:
            self._changed(write)
        return changed

    def assign_all(self, entries: list[tuple[int, int]]) -> None:
        """Several entries, one write (the epochs read back from the log's batches)."""
        if any([self._assign(e, o) for e, o in entries]):
            self._write()

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid partition leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and self._epochs[-1] == epoch and self._starts[-1] <= start_offset:
            return False
        keep = min(bisect_left(self._epochs, epoch), bisect_left(self._starts, start_offset))
        removed = list(zip(self._epochs[keep:], self._starts[keep:]))
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            log.warning("%s: new epoch entry (%d, %d) truncated conflicting entries %s",
                        self.checkpoint.path, epoch, start_offset, removed)
        del self._epochs[keep:], self._starts[keep:]
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def truncate_from_end(self, end_offset: int, write: bool = True) -> None:
        """Drop the entries starting at or after ``end_offset`` (the log was truncated there).
        ``write=False`` (on load, where become_leader follows) leaves the file behind until the
        next ``assign``, which the log calls before it appends anything: a file that is behind
        has only entries too many, which the next load cuts again."""
        i = bisect_left(self._starts, end_offset)
        if end_offset >= 0 and i < len(self._starts):
            del self._epochs[i:], self._starts[i:]
            self._changed(write)

    def truncate_from_start(self, start_offset: int, write: bool = True) -> None:
        """The log now starts at ``start_offset``: the epoch holding it starts there and
        older entries go (Kafka's ``truncateFromStart``)."""
        i = bisect_right(self._starts, start_offset)
        if i == 0 or (i == 1 and self._starts[0] == start_offset):
            return
        epoch = self._epochs[i - 1]
        del self._epochs[:i], self._starts[:i]
        self._epochs.insert(0, epoch)
        self._starts.insert(0, start_offset)
        self._changed(write)

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
        self._write()

    # ------------------------------------------------------------------ file
    def _changed(self, write: bool) -> None:
        if write:
            self._write()
        else:
            self._file_behind = True

    def _write(self) -> None:
        self.checkpoint.write(self.entries())
        self._file_behind = False
        self._written += 1

    @property
    def file_behind(self) -> bool:
        return self._file_behind

    @property
    def dirty(self) -> bool:
        return self._synced != self._written

    def flush(self) -> None:
        """Make the last write durable (a no-op when it is). Safe from a worker thread while
        the owner writes: a write that races the fsync leaves the cache dirty."""
        version = self._written
        if version != self._synced:
            self.checkpoint.sync()
            self._synced = version

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.entries()})"
