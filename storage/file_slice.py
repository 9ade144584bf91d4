"""Segment file descriptors and slices of them (Kafka's ``FileRecords`` / ``FileRecords.slice``).

A fetch answers each partition with a slice of one segment file. The slice is not read
into memory: the server sends it straight from the file to the socket (``os.sendfile``,
Kafka's zero-copy ``transferTo``) once the response header has gone out. Between the
read and the send the segment may roll, be deleted by retention or replaced by the
cleaner; as in Kafka, whose ``FileChannel`` stays readable until closed, the slice keeps
its descriptor open: a :class:`FileHandle` is closed when the last holder (the segment,
a slice waiting to be sent) lets go of it, never while one still uses it.
"""
from __future__ import annotations

import os
import weakref


class FileHandle:
    """An open file descriptor, closed when the handle is no longer referenced: never under
    a holder's feet, so a descriptor number is never reused while a slice may still send
    from it (CPython frees an unreferenced handle at once)."""

    __slots__ = ("fd", "_finalizer", "__weakref__")

    def __init__(self, fd: int):
        self.fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, path: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> "FileHandle":
        return cls(os.open(path, flags, mode))

    def __repr__(self) -> str:
        return f"FileHandle(fd={self.fd})"


class FileSlice:
    """``size`` bytes of an open segment file from ``position``: the records of one partition
    in a fetch response, read (or sent) only when the response is written."""

    __slots__ = ("handle", "position", "size")

    def __init__(self, handle: FileHandle, position: int, size: int):
        self.handle, self.position, self.size = handle, position, size

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        """The slice's bytes (a copy; the fallback where the socket cannot sendfile). A file
        truncated since the read cannot give them: raises, as Kafka's FileRecords.writeTo does."""
        data = os.pread(self.handle.fd, self.size, self.position)
        if len(data) != self.size:
            raise TruncatedSliceError(self, len(data))
        return data

    def __repr__(self) -> str:
        return f"FileSlice(fd={self.handle.fd}, position={self.position}, size={self.size})"


class TruncatedSliceError(OSError):
    """The segment file shrank between the read and the send (Kafka: "Size of FileRecords
    ... has been truncated during write"): the response cannot be completed."""

    def __init__(self, s: FileSlice, got: int):
        super().__init__(f"segment file truncated during write: {s!r} gave {got} bytes")
