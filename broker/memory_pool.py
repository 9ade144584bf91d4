"""Kafka's memory pool (``queued.max.request.bytes``): the bytes of the requests being read or
waiting to be handled, in total over all connections. When it is exhausted the broker stops
reading those requests from their sockets until memory is given back (Kafka's Selector mutes
the channels); TCP flow control then holds the clients.

Unlike Kafka, which takes a request's whole announced size from the pool before reading it,
the pool is charged as a frame's bytes arrive (the frame's buffer grows with them), so a
client announcing a 100 MB request and sending 70 KB holds about 70 KB. The frames a
connection reads in its own buffer (up to 64 KB, FrameReader) are per-connection memory,
bounded by the connection limits, and never wait for the pool: small requests keep flowing
while large ones wait.

A frame that needs more than is left waits; if nothing else could free memory (every byte is
held by frames still arriving), the oldest waiting frame may read past the limit, one frame at
a time until it is handled, as Kafka lets one allocation overshoot: the pool never deadlocks,
and holds at most ``queued.max.request.bytes + socket.request.max.bytes``.
"""
from __future__ import annotations

import logging
import time
from collections import deque

import trio

log = logging.getLogger("minikafka.server")


class MemoryPool:
    def __init__(self, capacity: int):
        self.capacity = capacity  # <= 0: unbounded (Kafka's -1)
        self.used = 0
        self._waiters: deque = deque()  # (owner, trio.Event), oldest first
        self._overdraft = None  # the owner allowed past the limit until it releases its frame
        self._depleted_since: float | None = None
        self._depleted_before = 0.0  # seconds of the depletions that ended

    @property
    def available(self) -> int:
        return max(0, self.capacity - self.used) if self.capacity > 0 else 2**63 - 1

    @property
    def depleted_seconds(self) -> float:
        """Kafka's memory-pool-depleted-time-total: how long the pool has been used up in all."""
        since = self._depleted_since
        return self._depleted_before + (time.monotonic() - since if since is not None else 0.0)

    @property
    def depleted(self) -> bool:
        return self.capacity > 0 and self.used >= self.capacity

    def charge(self, n: int) -> None:
        """Bytes already in memory (what the connection buffered before the frame proved large)."""
        self.used += n
        self._note_depletion()

    async def take(self, n: int, owner) -> None:
        """Wait until ``n`` more bytes may be read for ``owner``'s frame, and charge them
        (``n`` = 0: wait until the pool is not used up)."""
        if self.capacity <= 0 or owner is self._overdraft or (
                not self._waiters and self.used + max(n, 1) <= self.capacity):
            self.charge(n)
            return
        entry = [owner, n, trio.Event()]
        self._waiters.append(entry)
        self._grant_overdraft()
        try:
            await entry[2].wait()
        except BaseException:
            if entry[2].is_set():
                self.release(n, owner)  # charged for this waiter as it was woken
            else:
                self._waiters.remove(entry)
            raise

    def release(self, n: int, owner=None) -> None:
        """Give back ``n`` bytes (a handled request, a closed connection)."""
        self.used -= n
        if owner is not None and owner is self._overdraft:
            self._overdraft = None
        if self._depleted_since is not None and not self.depleted:
            self._depleted_before += time.monotonic() - self._depleted_since
            self._depleted_since = None
        self._wake()

    def _wake(self) -> None:
        """Let waiting frames read again, oldest first, while their bytes fit (charged here, so
        that nobody else takes them before they run)."""
        while self._waiters and self.used + max(self._waiters[0][1], 1) <= self.capacity:
            _, n, event = self._waiters.popleft()
            self.charge(n)
            event.set()
        self._grant_overdraft()

    def _grant_overdraft(self) -> None:
        """With nobody past the limit, the oldest waiter may complete its frame regardless, so the
        frames still arriving can never all wait on each other."""
        if self._overdraft is None and self._waiters:
            owner, n, event = self._waiters.popleft()
            self._overdraft = owner
            self.charge(n)
            event.set()

    def _note_depletion(self) -> None:
        if self._depleted_since is None and self.depleted:
            self._depleted_since = time.monotonic()
            log.info("queued.max.request.bytes=%d reached: requests wait to be read until memory is freed",
                     self.capacity)
