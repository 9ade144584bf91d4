"""Storage's long work run on the event loop in slices (the record walk of a large or
compressed batch: storage/validator.py, protocol/record_walk.py).

The work is a generator of steps: ``None`` after each bounded piece of work, or a callable
doing one large C decompression (a big snappy block, a zstd frame with a large window), which
runs in a worker thread. :meth:`Stepper.run` lets other tasks run whenever its task has held
the loop for :data:`SLICE_SECONDS`, so no request keeps the others waiting longer than that.
Past its first slice, a walk holds one of :data:`HEAVY_AT_ONCE` places: the work in progress
at once, and the codec memory it holds (a zstd window, a snappy block), stays bounded however
many clients send inflating batches.
"""
from __future__ import annotations

import time

import trio

SLICE_SECONDS = 0.002
HEAVY_AT_ONCE = 2


class LoopTurn:
    """How long a task has held the event loop since it last let the others run:
    :meth:`pass_if_long` lets them once that passes :data:`SLICE_SECONDS` (a large frame's
    receive and copies, in broker/server.py)."""

    __slots__ = ("start",)

    def __init__(self):
        self.start = time.perf_counter()

    def restart(self) -> None:
        """The task has just waited (the others ran meanwhile)."""
        self.start = time.perf_counter()

    async def pass_if_long(self) -> None:
        if time.perf_counter() - self.start > SLICE_SECONDS:
            await trio.sleep(0)
            self.start = time.perf_counter()


class Stepper:
    def __init__(self, heavy_at_once: int = HEAVY_AT_ONCE):
        self._limiter = None
        self._heavy_at_once = heavy_at_once

    @property
    def limiter(self) -> trio.CapacityLimiter:
        if self._limiter is None:
            self._limiter = trio.CapacityLimiter(self._heavy_at_once)
        return self._limiter

    async def run(self, steps):
        """Drive ``steps`` to its end; return its value."""
        clock = time.perf_counter
        start = clock()
        held = False
        try:
            step = next(steps)
            while True:
                if step is not None or clock() - start > SLICE_SECONDS:
                    if not held:
                        await self.limiter.acquire()
                        held = True
                    if step is not None:
                        await trio.to_thread.run_sync(step)
                    else:
                        await trio.sleep(0)
                    start = clock()
                step = steps.send(None)
        except StopIteration as done:
            return done.value
        finally:
            if held:
                self.limiter.release()
            steps.close()
