"""The fsync batcher (a "group commit" in database terms): one fsync per log serves every
transaction commit point appended to it meanwhile."""
from __future__ import annotations

from typing import Callable

import outcome
import trio

# worker threads fsyncing one round's logs: fsyncs of different files overlap in the file
# system's journal commit, so a few threads make a round of many logs about as short as
# one of a single log
FSYNC_THREADS = 4


class FsyncBatcher:
    """One fsync per log serves every commit point appended to it meanwhile.

    The transaction coordinator appends a Prepare* record to a `__transaction_state`
    partition and waits until it is durable before EndTxn is answered. Instead of one
    fsync (and one worker thread) per EndTxn, a round fsyncs every log appended to since
    the previous round, once each, in one worker thread (helped by a few more when the
    round has several logs: fsyncs of different files overlap in the file system's journal
    commit). Commit points appended while a round is in flight gather for the next one,
    which starts the moment the round ends; then all the round's waiters go on together.
    The round's end is delivered straight from its thread to the event loop (not through
    a waiting task), so no waiter waits for another task to be scheduled first.
    """

    def __init__(self, log_dir_failed: Callable[[OSError], None]):
        self._log_dir_failed = log_dir_failed  # halts the broker
        self._dirty: dict = {}  # log -> offset (exclusive) the next round must make durable
        self._in_flight: _Round | None = None
        self._next: _Round | None = None  # the round after it, once someone waits for it
        self._helpers = None  # a ThreadPoolExecutor, made on first use (off the start path)

    async def flush(self, lg, upto: int) -> None:
        """Return once ``lg`` is durable up to ``upto`` (its recovery point has reached it)."""
        while lg.recovery_point < min(upto, lg.log_end_offset):
            if upto > self._dirty.get(lg, -1):
                self._dirty[lg] = upto
            if self._in_flight is None:
                rnd = self._start_round(_Round())
            else:
                if self._next is None:
                    self._next = _Round()
                rnd = self._next
            # shielded: a commit point being made durable is waited for, also at shutdown
            with trio.CancelScope(shield=True):
                await rnd.done.wait()
            if rnd.error is not None:
                raise rnd.error

    def _start_round(self, rnd: "_Round") -> "_Round":
        items, self._dirty = list(self._dirty.items()), {}
        self._in_flight = rnd
        token = trio.lowlevel.current_trio_token()

        def deliver(result) -> None:  # in the worker thread, when the round is done
            token.run_sync_soon(self._round_ended, rnd, result)

        trio.lowlevel.start_thread_soon(lambda: self._flush_all(items), deliver, name="fsync batcher")
        return rnd

    def _round_ended(self, rnd: "_Round", result: outcome.Outcome) -> None:
        """In the event loop (run_sync_soon: must not raise, or the waiters would hang)."""
        if isinstance(result, outcome.Error):
            if isinstance(result.error, OSError):
                self._log_dir_failed(result.error)  # halts
            rnd.error = result.error  # the waiters raise it
        rnd.done.set()
        self._in_flight = None
        if self._dirty:
            nxt, self._next = self._next, None
            self._start_round(nxt if nxt is not None else _Round())

    def _flush_all(self, items: list) -> None:
        """fsync each log's data up to its offset (in a worker thread)."""
        threads = min(len(items), FSYNC_THREADS)
        if threads <= 1:
            _flush_logs(items)
            return
        if self._helpers is None:
            from concurrent.futures import ThreadPoolExecutor

            self._helpers = ThreadPoolExecutor(FSYNC_THREADS - 1, thread_name_prefix="fsync-batcher")
        helping = [self._helpers.submit(_flush_logs, items[i::threads]) for i in range(1, threads)]
        try:
            _flush_logs(items[0::threads])
        finally:
            for f in helping:
                f.result()  # raises a helper's OSError


def _flush_logs(items: list) -> None:
    for lg, upto in items:
        lg.flush(True, upto)


class _Round:
    __slots__ = ("done", "error")

    def __init__(self):
        self.done = trio.Event()
        self.error: BaseException | None = None
