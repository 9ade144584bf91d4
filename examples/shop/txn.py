"""Transactional calls with deadlines (a guard against a kafka-python wedge)."""
from __future__ import annotations


class StuckClientError(Exception):
    """A transactional call did not finish in time (the client is wedged)."""


def bounded(producer, what: str, timeout_s: float, *args) -> None:
    """``producer.<what>(*args)`` with a deadline.

    kafka-python's ``send_offsets_to_transaction`` / ``commit_transaction`` /
    ``abort_transaction`` wait without a timeout; kafka-python 3.0.x can wedge
    when the broker dies while a transactional request is queued (its sender
    never re-sends the request after rediscovering the coordinator).  Waiting
    on the request's result with a deadline turns that into an error the
    service recovers from by rebuilding its clients: the new producer's
    ``init_transactions`` settles the abandoned transaction.
    """
    tm = getattr(producer, "_transaction_manager", None)
    sender = getattr(producer, "_sender", None)
    start = {"send_offsets_to_transaction": "send_offsets_to_transaction",
             "commit_transaction": "begin_commit",
             "abort_transaction": "begin_abort"}[what]
    if tm is None or sender is None or not hasattr(tm, start):  # other client versions
        getattr(producer, what)(*args)
        return
    result = getattr(tm, start)(*args)
    sender.wakeup()
    if not result.wait(timeout_ms=timeout_s * 1000):
        raise StuckClientError(f"{what} did not complete within {timeout_s:.0f}s")
