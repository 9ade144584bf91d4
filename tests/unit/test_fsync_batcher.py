"""The fsync batcher (broker.fsync_batcher) with logs in memory: one fsync per log and round
serves every waiter, commit points appended during a round wait for the next one (which
starts as the round ends), and a failed fsync reaches the waiters."""
from __future__ import annotations

import threading

import pytest
import trio
import trio.testing

from minikafka.broker.fsync_batcher import FsyncBatcher


class MemoryLog:
    """What FsyncBatcher uses of a UnifiedLog; `flush` (in a worker thread) waits for `gate`."""

    def __init__(self, gate: threading.Event, entered: threading.Semaphore, error: Exception | None = None):
        self.gate, self.entered, self.error = gate, entered, error
        self.log_end_offset = 0
        self.recovery_point = 0
        self.flushes: list[int] = []

    def append(self) -> int:
        self.log_end_offset += 1
        return self.log_end_offset

    def flush(self, data_only: bool, upto: int) -> None:
        assert data_only
        self.entered.release()
        self.gate.wait(10)
        if self.error is not None:
            raise self.error
        self.flushes.append(upto)
        self.recovery_point = max(self.recovery_point, min(upto, self.log_end_offset))


def test_one_fsync_per_log_and_round_serves_every_waiter():
    gate, entered = threading.Event(), threading.Semaphore(0)
    a, b = MemoryLog(gate, entered), MemoryLog(gate, entered)
    gc = FsyncBatcher(lambda e: pytest.fail(f"log dir failed: {e}"))
    returned = []

    async def commit(lg, name):
        upto = lg.append()
        await gc.flush(lg, upto)
        assert lg.recovery_point >= upto  # durable when it returns
        returned.append(name)

    async def main():
        async with trio.open_nursery() as n:
            n.start_soon(commit, a, "first")
            await trio.to_thread.run_sync(entered.acquire)  # round 1 (a up to 1) is fsyncing
            for lg, name in ((a, "a2"), (a, "a3"), (b, "b1")):
                n.start_soon(commit, lg, name)
            await trio.testing.wait_all_tasks_blocked()
            assert returned == []
            gate.set()  # round 1 ends; round 2 (a up to 3, b up to 1) follows at once
        await gc.flush(a, a.log_end_offset)  # nothing left to make durable: returns at once

    trio.run(main)
    assert returned[0] == "first" and sorted(returned[1:]) == ["a2", "a3", "b1"]
    assert a.flushes == [1, 3] and b.flushes == [1]


@pytest.mark.parametrize("error", [OSError(5, "Input/output error"), RuntimeError("bug")])
def test_a_failed_round_reaches_its_waiters(error):
    gate, entered = threading.Event(), threading.Semaphore(0)
    gate.set()
    lg = MemoryLog(gate, entered, error)
    failed = []
    gc = FsyncBatcher(failed.append)  # the broker's halts; this one returns

    async def main():
        with pytest.raises(type(error)):
            await gc.flush(lg, lg.append())

    trio.run(main)
    assert failed == ([error] if isinstance(error, OSError) else [])
    assert lg.recovery_point == 0
