"""JoinGroup and SyncGroup answers the group coordinator gives later (its `Waiter`s). The
coordinator never calls back: after each request and each timer tick the broker looks at
which of them it gave (`check`, from Context.after_work) and wakes their connections."""
from __future__ import annotations

import trio


class PendingAnswers:
    def __init__(self):
        self._waiting: dict = {}  # Waiter -> the trio.Event its connection waits on

    async def wait(self, waiter):
        """The waiter's result, once the coordinator gave it (without blocking other connections)."""
        if not waiter.done:
            ev = self._waiting[waiter] = trio.Event()
            try:
                await ev.wait()
            finally:
                self._waiting.pop(waiter, None)
        return waiter.result

    def check(self) -> None:
        for waiter, ev in list(self._waiting.items()):
            if waiter.done:
                ev.set()
